import { makeUrn } from "@mdp/core";
import { stopWorkSetThroughRevokedTokens, type Prisma, type StoppedWork } from "@mdp/db";
import { webhookUrnOf } from "../webhooks/webhook-contracts";

/** Who revoked, how (the start of each suspension's reason, e.g. `revokeAccessToken by <urn>`), and the audit's trigger. */
export interface Revocation {
  by: string;
  cause: string;
  trigger: string;
  /** how the revoker authenticated, or which chore revoked: the audit rows' `via` */
  via: string;
}

/**
 * Every revocation's second half, in its transaction: the work set through the tokens it revoked (or through tokens
 * created with them) is suspended or turned off, visibly and audited (@mdp/db's stopWorkSetThroughRevokedTokens).
 */
export function stopWorkSetThrough(
  tx: Prisma.TransactionClient,
  revokedIds: readonly string[],
  urnNamespace: string,
  revocation: Revocation,
): Promise<StoppedWork> {
  return stopWorkSetThroughRevokedTokens(tx, revokedIds, {
    by: revocation.by,
    cause: revocation.cause,
    trigger: revocation.trigger,
    details: { via: revocation.via },
    policyUrnOf: (id) => makeUrn(urnNamespace, "retentionPolicy", id),
    webhookUrnOf: (id) => webhookUrnOf(urnNamespace, id),
  });
}
