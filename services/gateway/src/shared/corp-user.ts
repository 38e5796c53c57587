const CORPUSER_PREFIX = "urn:li:corpuser:";

/**
 * A user urn as DataHub's CorpUser: what the urn says; no profile is held, so the profile fields are null. Tokens'
 * owners and the web app's users are both shown so.
 */
export function corpUserOf(urn: string) {
  return {
    urn,
    type: "CORP_USER",
    username: urn.startsWith(CORPUSER_PREFIX) ? urn.slice(CORPUSER_PREFIX.length) : urn,
    properties: null,
    editableProperties: null,
    info: null,
  };
}
