import { abbreviated, badInput, canonicalPrivilege, PRIVILEGES, withImplied, type Privilege } from "@mdp/core";

// The privilege names, their implications and DataHub's spellings are @mdp/core's (the workers check them too); the
// gateway's modules keep importing them from here, beside what only the gateway does with them (token scopes).
export { canonicalPrivilege, isPrivilege, PRIVILEGES, withImplied, type Privilege } from "@mdp/core";

/** The most privilege names one access token's `scopes` may list (DataHub spellings and repeats count). */
export const MAX_TOKEN_SCOPES = 32;

/**
 * An access token's requested scopes as privileges: each name ours or DataHub's spelling, at most MAX_TOKEN_SCOPES of
 * them, at least one (an empty list would read as "unscoped", the opposite of what a caller sending it means);
 * repeats and spellings of one privilege count once. 400 naming the field, the limit or the unknown name.
 */
export function parseScopes(field: string, names: readonly string[]): Privilege[] {
  if (names.length === 0) {
    throw badInput(`${field} must name at least one privilege; leave it out for a token with all of its actor's`);
  }
  if (names.length > MAX_TOKEN_SCOPES) {
    throw badInput(`${field} lists ${names.length} privileges; the limit is ${MAX_TOKEN_SCOPES}`);
  }
  const scopes = new Set<Privilege>();
  names.forEach((name, i) => {
    const privilege = canonicalPrivilege(name);
    if (privilege === undefined) {
      throw badInput(`${field}[${i}] '${abbreviated(name)}' is not a privilege; known: ${PRIVILEGES.join(", ")}`);
    }
    scopes.add(privilege);
  });
  return [...scopes].sort();
}

/**
 * What a scoped token may do: its scopes with what they imply, and of those only what its actor holds now (`held`,
 * read at each check, so a privilege the actor loses drops from every token it has). Unscoped (`undefined`): `held`.
 */
export function withinScopes(
  held: ReadonlySet<Privilege>,
  scopes: readonly Privilege[] | undefined,
): ReadonlySet<Privilege> {
  if (scopes === undefined) return held;
  return new Set([...withImplied(scopes)].filter((p) => held.has(p)));
}
