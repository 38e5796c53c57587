import { randomUUID } from "node:crypto";
import { z } from "zod";
import { conflict, notFound, type Config } from "@mdp/core";
import {
  type Database,
  findLiveServiceAccount,
  inPrismaTransaction,
  insertServiceAccount,
  liveServiceAccountCount,
  lockServiceAccountCreation,
  markServiceAccountDeleted,
  replicaReads,
  type ServiceAccountRow,
} from "@mdp/db";
import { recordAudit } from "../audit/audit.service";
import type { Actor } from "../auth/actor";
import { pageInput } from "../shared/paging";
import { textField, urnField } from "../shared/validate";
import type { DelegatedWorkService } from "../incident-response/delegated-work.service";
import { serviceAccountUrn } from "../tokens/service-account-urn";

/** docs/limits.md */
export const MAX_SERVICE_ACCOUNT_DISPLAY_NAME = 256;
export const MAX_SERVICE_ACCOUNT_DESCRIPTION = 2000;
export const MAX_SERVICE_ACCOUNT_QUERY = 256;

/** A service account as DataHub's clients read it (its ServiceAccount type); times are epoch ms. */
export interface ServiceAccountView {
  urn: string;
  type: "CORP_USER";
  /** the username of its urn: service_<uuid> */
  name: string;
  displayName: string | null;
  description: string | null;
  createdBy: string;
  createdAt: number;
  updatedAt: number;
  /** when any of its live tokens was last used (this service's extension); null: never, or no live token */
  lastUsedAt: number | null;
}

export const createServiceAccountArgs = z.object({
  input: z.object({
    displayName: textField({ max: MAX_SERVICE_ACCOUNT_DISPLAY_NAME, trim: true })
      .nullish()
      .transform((name) => name || null),
    description: textField({ max: MAX_SERVICE_ACCOUNT_DESCRIPTION })
      .nullish()
      .transform((description) => description ?? null),
  }),
});
export const listServiceAccountsArgs = pageInput({
  query: textField({ max: MAX_SERVICE_ACCOUNT_QUERY, trim: true })
    .nullish()
    .transform((query) => query || undefined),
});
export const serviceAccountArgs = z.object({ urn: urnField("corpuser") });

/**
 * Service accounts (docs/api.md "Service accounts", DataHub Core v1.4): non-human users, `urn:li:corpuser:service_<uuid>`,
 * granted privileges by policies like any user and acting through SERVICE_ACCOUNT tokens (TokenService.create). Every
 * operation needs MANAGE_SERVICE_ACCOUNTS (declared with its contract in service-accounts.graphql.ts). Deleting one ends its access as revokeActorAccess does (every token revoked
 * on every replica within 1 s, its schedules suspended, its tasks asked to stop), in the deletion's transaction.
 */
export class ServiceAccountService {
  constructor(
    private readonly db: Database,
    private readonly delegatedWork: Pick<DelegatedWorkService, "endAccessOf">,
    private readonly config: Pick<Config, "MAX_SERVICE_ACCOUNTS">,
  ) {}

  async create(
    actor: Actor,
    { input: { displayName, description } }: z.output<typeof createServiceAccountArgs>,
  ): Promise<ServiceAccountView> {
    const id = randomUUID();
    const urn = serviceAccountUrn(id);
    const row = await inPrismaTransaction(this.db.prisma, async (tx) => {
      await lockServiceAccountCreation(tx);
      const live = await liveServiceAccountCount(tx);
      if (live >= this.config.MAX_SERVICE_ACCOUNTS) {
        throw conflict(
          `There are already ${live} service accounts, the limit of ${this.config.MAX_SERVICE_ACCOUNTS} ` +
            `(MAX_SERVICE_ACCOUNTS); delete one first.`,
        );
      }
      const created = await insertServiceAccount(tx, { urn, id, displayName, description, createdBy: actor.urn });
      await recordAudit(tx, actor, "serviceAccount.create", urn, { displayName, description });
      return created;
    });
    return viewOf({ ...row, lastUsedAt: null });
  }

  async list({ input: { start, count, query } }: z.output<typeof listServiceAccountsArgs>) {
    const { total, rows } = await replicaReads.serviceAccountPage(this.db.stale, query, start, count);
    return { start, count: rows.length, total, serviceAccounts: rows.map(viewOf) };
  }

  /** The live account, or null (DataHub's smoke tests accept null for an unknown one). */
  async get({ urn }: z.output<typeof serviceAccountArgs>): Promise<ServiceAccountView | null> {
    const row = await findLiveServiceAccount(this.db.prisma, urn);
    return row && viewOf(row);
  }

  /**
   * Marks the account deleted and ends its access in one transaction (the row first: its lock orders the deletion
   * against a concurrent mint), audited as `serviceAccount.delete` beside revokeActorAccess's rows; then every replica
   * is told. NOT_FOUND for an account that is not live.
   */
  async delete(actor: Actor, { urn }: z.output<typeof serviceAccountArgs>): Promise<boolean> {
    const reason = `deleteServiceAccount by ${actor.urn}`;
    await this.delegatedWork.endAccessOf(actor, urn, { reason, given: "", suspendWork: true }, async (tx) => {
      if (!(await markServiceAccountDeleted(tx, urn, actor.urn))) {
        throw notFound(`Service account ${urn} does not exist`);
      }
      await recordAudit(tx, actor, "serviceAccount.delete", urn);
    });
    return true;
  }
}

function viewOf(row: ServiceAccountRow): ServiceAccountView {
  return {
    urn: row.urn,
    type: "CORP_USER",
    name: row.urn.slice("urn:li:corpuser:".length),
    displayName: row.displayName,
    description: row.description,
    createdBy: row.createdBy,
    createdAt: row.createdAt.getTime(),
    updatedAt: row.updatedAt.getTime(),
    lastUsedAt: row.lastUsedAt?.getTime() ?? null,
  };
}
