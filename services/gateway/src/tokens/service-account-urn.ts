/** DataHub's service accounts are users of this form: urn:li:corpuser:service_<uuid>. */
export const SERVICE_ACCOUNT_URN_PREFIX = "urn:li:corpuser:service_";

export function serviceAccountUrn(id: string): string {
  return `${SERVICE_ACCOUNT_URN_PREFIX}${id}`;
}
