-- A token's urn is DataHub's urn:li:dataHubAccessToken:<id> wherever it is shown (AccessTokenMetadata.urn, platform
-- events, webhooks, the audit trail). Audit rows written before named it urn:<URN_NAMESPACE>:accessToken:<id>: renamed
-- here, so a lookup of the audit trail by a token's urn finds its whole history.
UPDATE "audit_event"
   SET "target_urn" = 'urn:li:dataHubAccessToken:' || substring("target_urn" FROM '[^:]+$')
 WHERE "target_urn" ~ '^urn:[A-Za-z][A-Za-z0-9_-]*:accessToken:[0-9a-fA-F-]{36}$';
