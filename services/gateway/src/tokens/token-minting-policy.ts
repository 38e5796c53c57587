import { z } from "zod";
import {
  abbreviated,
  badInput,
  isoDurationSeconds,
  forbidden,
  MAX_TOKEN_CHAIN_DEPTH,
  missingFrom,
  requireLength,
  SYSTEM_ACTOR_URN,
  type Config,
  type Principal,
} from "@mdp/core";
import { SERVICE_ACCOUNT_URN_PREFIX } from "./service-account-urn";
import type { Actor } from "../auth/actor";
import { parsedBy, rule, textField, urnField } from "../shared/validate";
import type { PolicyEngine } from "../policies/policy-engine";
import { parseScopes, withImplied, withinScopes, type Privilege } from "../policies/privileges";
import type { TokenStore } from "./token.store";

const HOUR = 3600;
const DAY = 24 * HOUR;
/** The duration enum's lifetimes, in seconds; the allowed-durations policy judges them as it judges durationIso. */
const DURATIONS = {
  ONE_HOUR: HOUR,
  ONE_DAY: DAY,
  ONE_WEEK: 7 * DAY,
  ONE_MONTH: 30 * DAY,
  THREE_MONTHS: 90 * DAY,
  SIX_MONTHS: 180 * DAY,
  ONE_YEAR: 365 * DAY,
  NO_EXPIRY: null,
} as const;
export type AccessTokenDuration = keyof typeof DURATIONS;

/** ACCESS_TOKEN_ALLOWED_DURATIONS, parsed by the config. */
type AllowedDurations = Config["ACCESS_TOKEN_ALLOWED_DURATIONS"];

/** The lifetime asked for: its seconds (null: never expires), and how it was asked for (the audit, messages). */
interface Lifetime {
  seconds: number | null;
  /** `input.duration` or `input.durationIso` */
  field: string;
  asked: string;
}

/**
 * createAccessToken's (and getAccessToken's) input; `allowNoExpiry` is ACCESS_TOKEN_ALLOW_NO_EXPIRY, `allowed`
 * ACCESS_TOKEN_ALLOWED_DURATIONS. Which actor,
 * scopes and duration the caller may give depends on who it is: checked once this has parsed (create).
 */
export const createTokenArgs = (allowNoExpiry: boolean, allowed: AllowedDurations) =>
  z.object({
    input: z
      .object({
        /** SERVICE_ACCOUNT: a service account's token (actorUrn a live service account), MANAGE_SERVICE_ACCOUNTS */
        type: z.enum(["PERSONAL", "SERVICE_ACCOUNT"]),
        actorUrn: urnField("corpuser"),
        /**
         * The privileges the token is limited to (ours or DataHub's spellings, 1 to MAX_TOKEN_SCOPES), sorted. Absent:
         * unscoped, or, when the caller itself uses a scoped token, that token's scopes.
         */
        scopes: z
          .array(z.string())
          .transform(parsedBy((at, names: string[]) => parseScopes(at, names)))
          .nullish(),
        /** required (GraphQL's type leaves it optional for the deprecated getAccessToken, which names its tokens) */
        name: z
          .string()
          .nullish()
          .refine(
            ...rule((at, name: string | null | undefined) => {
              if (name == null) throw badInput(`${at} is required: a name for the token`);
              requireLength(at, name.trim(), { min: 1, max: 256 });
            }),
          )
          .transform((name) => name!.trim()),
        description: textField({ max: 2000 })
          .nullish()
          .transform((description) => description ?? null),
        duration: z
          .enum(Object.keys(DURATIONS) as [AccessTokenDuration, ...AccessTokenDuration[]])
          .nullish()
          .refine(
            ...rule((at, duration: AccessTokenDuration | null | undefined) => {
              if (duration == null) return;
              const seconds = DURATIONS[duration];
              if (seconds === null && !allowNoExpiry) {
                throw badInput(`${at} NO_EXPIRY is not allowed on this server (ACCESS_TOKEN_ALLOW_NO_EXPIRY=false)`);
              }
              if (seconds !== null) requireAllowed(at, duration, seconds, allowed);
            }),
          ),
        /** the lifetime as ISO-8601 (PT1H, P30D, P1M = 30 days, P1Y = 365 days); exactly one of it and duration */
        durationIso: z
          .string()
          .nullish()
          .refine(
            ...rule((at, iso: string | null | undefined) => {
              if (iso == null) return;
              const seconds = isoDurationSeconds(iso);
              if (seconds === null) {
                throw badInput(`${at} '${abbreviated(iso)}' is not an ISO-8601 duration (e.g. PT1H, P30D)`);
              }
              requireAllowed(at, iso, seconds, allowed);
            }),
          ),
      })
      .transform(
        parsedBy((_at, { duration, durationIso, ...input }) => {
          if ((duration == null) === (durationIso == null)) {
            throw badInput(
              `input.duration and input.durationIso: give exactly one of them (${duration == null ? "neither" : "both"} ` +
                `given), the duration enum (e.g. ONE_MONTH) or an ISO-8601 duration (e.g. P30D)`,
            );
          }
          const lifetime: Lifetime =
            duration != null
              ? { seconds: DURATIONS[duration], field: "input.duration", asked: duration }
              : { seconds: isoDurationSeconds(durationIso!), field: "input.durationIso", asked: durationIso!.trim() };
          return { ...input, duration: duration ?? undefined, durationIso: durationIso ?? undefined, lifetime };
        }),
      ),
  });

/** A lifetime not in ACCESS_TOKEN_ALLOWED_DURATIONS is refused naming the list. */
function requireAllowed(at: string, asked: string, seconds: number, allowed: AllowedDurations): void {
  if (allowed.some((d) => d.seconds === seconds)) return;
  throw badInput(
    `${at} ${abbreviated(asked)} is not an allowed token lifetime on this server: ACCESS_TOKEN_ALLOWED_DURATIONS=` +
      `${allowed.map((d) => d.iso).join(",")} (P1M counts 30 days, P1Y 365)`,
  );
}

/**
 * Who may be minted a token, and with what: the actor (not the system actor, root only by root), the type that fits
 * the actor, the scopes (within the minter's token's and the actor's privileges), and no more power than the minter's
 * request. TokenService.create asks each in turn once the input has parsed.
 */
export class TokenMintingPolicy {
  constructor(
    private readonly store: Pick<TokenStore, "isServiceAccount">,
    private readonly policies: PolicyEngine,
    private readonly config: Pick<Config, "ROOT_USER_URN">,
  ) {}

  /**
   * The two principals that hold every privilege through the built-in policy are not minted for like other users. The
   * system actor is the system client's own identity: it authenticates with the client's credentials and has no
   * tokens (a token for it would be a second, revocable-only-by-hand system client). The root user's tokens are minted
   * only by the root user itself (its own token, or the system client naming it): no MANAGE_ACCESS_TOKENS holder
   * mints a token that reads as root's, whatever its scopes.
   */
  requireMintableActor(caller: Actor, actorUrn: string): void {
    if (actorUrn === SYSTEM_ACTOR_URN) {
      throw badInput(
        `input.actorUrn ${SYSTEM_ACTOR_URN} is the system actor, the system client's own identity: it has no access ` +
          `tokens (the system client authenticates with its credentials)`,
      );
    }
    if (actorUrn === this.config.ROOT_USER_URN && caller.urn !== actorUrn) {
      throw forbidden(
        `${caller.urn} is unauthorized to generate access tokens for ${actorUrn}, the root user: only the root user ` +
          `mints its own tokens.`,
      );
    }
  }

  /**
   * A SERVICE_ACCOUNT token is for a service account (one deleted meanwhile is refused by the insert, under its
   * lock), and a service account has no PERSONAL tokens: its tokens are told apart by type (their minter does not
   * bound them, boundingMinter). Only urns of the service accounts' form are looked up.
   */
  async requireTypeOfActor(type: "PERSONAL" | "SERVICE_ACCOUNT", actorUrn: string): Promise<void> {
    const account = actorUrn.startsWith(SERVICE_ACCOUNT_URN_PREFIX) && (await this.store.isServiceAccount(actorUrn));
    if (type === "SERVICE_ACCOUNT" && !account) {
      throw badInput(
        `input.actorUrn ${abbreviated(actorUrn)} is not a service account: SERVICE_ACCOUNT tokens are for the ` +
          `accounts createServiceAccount makes (urn:li:corpuser:service_<uuid>)`,
      );
    }
    if (type === "PERSONAL" && account) {
      throw badInput(`input.type PERSONAL: ${actorUrn} is a service account, whose tokens are of type SERVICE_ACCOUNT`);
    }
  }

  /**
   * The new token's scopes: those asked for (parsed); none asked for, the caller's own token's (a scoped token mints
   * tokens of at most its scopes, so a leaked read-only token cannot be traded for a stronger one); else unscoped.
   */
  scopesOfNewToken(minter: Actor, requested: Privilege[] | null | undefined): Privilege[] | undefined {
    const scopes = requested ?? (minter.scopes && [...minter.scopes]);
    if (scopes === undefined || minter.scopes === undefined) return scopes;
    const allowed = withImplied(minter.scopes);
    const wider = scopes.filter((p) => !allowed.has(p));
    if (wider.length > 0) {
      throw forbidden(
        `${minter.urn} is unauthorized to generate an access token scoped to ${wider.join(", ")}: the access token ` +
          `in use is scoped to ${minter.scopes.join(", ")}, and a token it creates may have no other scopes.`,
      );
    }
    return scopes;
  }

  /**
   * Each scope must be a privilege the token's actor holds now (it would grant nothing, and the token would read as
   * stronger than it is). For another user the refusal does not say which, as requireNoStrongerThanMinter does not.
   */
  async requireScopesHeld(minter: Actor, actorUrn: string, scopes: Privilege[] | undefined): Promise<void> {
    if (scopes === undefined) return;
    const lacking = missingFrom(await this.policies.grantsOf(actorUrn), new Set(scopes));
    if (lacking.length === 0) return;
    throw forbidden(
      actorUrn === minter.urn
        ? `${minter.urn} is unauthorized to generate an access token scoped to ${lacking.join(", ")}: you do not hold ` +
            `${lacking.length === 1 ? "it" : "them"}, and a token may have only privileges of its actor.`
        : `${minter.urn} is unauthorized to generate an access token for ${actorUrn} with these scopes: it does not ` +
            `hold them all, and a token may have only privileges of its actor.`,
    );
  }

  /**
   * A token never carries more power than the request that mints it: what it may do (its actor's privileges, within
   * its scopes) must be within what the minter's request may now (PolicyEngine.privilegesOf: the minter's own token's
   * chain included), or MANAGE_ACCESS_TOKENS would mint a root token, and a weak token would mint a strong one. This
   * is the early, explicit refusal; the bound itself holds at every use (the new token's minter and parent are links
   * of its chain), so a privilege the minter loses later leaves the token too. The system client is no exception:
   * acting for a user it mints as that user (acting for nobody, as the system actor, which holds every privilege).
   * For another user the refusal does not list the privileges, which would tell the minter what that user holds.
   */
  async requireNoStrongerThanMinter(minter: Actor, actorUrn: string, scopes: Privilege[] | undefined): Promise<void> {
    // The common case, a user's own unscoped token or the system client minting for itself: nothing to compare.
    if (actorUrn === minter.urn && minter.minterUrn === undefined && minter.parent === undefined && !minter.scopes) {
      return;
    }
    const [held, wanted] = await Promise.all([
      this.policies.privilegesOf(minter),
      this.policies.grantsOf(actorUrn).then((grants) => withinScopes(grants, scopes)),
    ]);
    const lacking = missingFrom(held, wanted);
    if (lacking.length === 0) return;
    if (actorUrn !== minter.urn) {
      throw forbidden(
        `${minter.urn} is unauthorized to generate access tokens for ${actorUrn}: it holds privileges you do not.`,
      );
    }
    throw forbidden(
      `${minter.urn} is unauthorized to generate this access token: the access token in use does not hold ` +
        `${lacking.join(", ")} (its creator or the token it was created with does not), and a token it creates may ` +
        `hold no more than it; name scopes within what it holds.`,
    );
  }
}

/** How many tokens a principal's chain holds: its own, and each parent's. */
function chainLength(principal: Principal): number {
  let length = principal.tokenId === undefined ? 0 : 1;
  for (let parent = principal.parent; parent !== undefined; parent = parent.parent) length++;
  return length;
}

/**
 * A token minted with a token is one link longer than the caller's chain, which every use of it intersects: at most
 * MAX_TOKEN_CHAIN_DEPTH tokens in all. 400: the credential in use, not a privilege, is what cannot mint. Rotation's
 * rule too, for a successor that the caller's token becomes the parent of.
 */
export function requireChainRoom(actor: Actor): void {
  if (actor.via !== "token" || actor.session || chainLength(actor) < MAX_TOKEN_CHAIN_DEPTH) return;
  throw badInput(
    `the access token in use is the last of a chain of ${MAX_TOKEN_CHAIN_DEPTH} tokens, each created with the one ` +
      `before (the limit, MAX_TOKEN_CHAIN_DEPTH): it cannot create another; create this one with a token earlier ` +
      `in the chain`,
  );
}

/**
 * A token minted with a token expires no later than it (NO_EXPIRY only under a token that never expires): otherwise
 * it would outlive what it was minted under. 400 naming `what` (the field and what it asked for) and when the token in
 * use expires, then `remedy`. createAccessToken's rule, and rotation's for a successor the caller's token parents.
 */
export function requireWithinTokenInUse(actor: Actor, exp: number | undefined, what: string, remedy: string): void {
  const parentExp = actor.tokenExpiresAt;
  if (actor.via !== "token" || actor.session || parentExp === undefined) return;
  if (exp !== undefined && exp * 1000 <= parentExp) return;
  throw badInput(
    `${what} would outlive the access token in use, which expires at ${new Date(parentExp).toISOString()}: a token ` +
      `created with another may not expire after it; ${remedy}`,
  );
}

export function requireWithinParentExpiry(actor: Actor, lifetime: Lifetime, exp: number | undefined): void {
  requireWithinTokenInUse(
    actor,
    exp,
    `${lifetime.field} ${abbreviated(lifetime.asked)}`,
    "choose a shorter duration, or create it with a longer-lived token",
  );
}
