/** What the gateway fuzz test (fuzz.int.spec.ts) sends and gets back, and who it is about. */
export const ROOT = "urn:li:corpuser:admin";
export const HOLDER = "urn:li:corpuser:fuzz-holder";
export const NOBODY = "urn:li:corpuser:fuzz-nobody";
export const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,fuzz.table,PROD)";

/** A request as sent, raw: the body is bytes so that it can be truncated, mis-encoded or not JSON at all. */
export interface FuzzRequest {
  kind: string;
  method: string;
  path: string;
  auth: string;
  headers: Record<string, string>;
  body?: Buffer;
}

export interface Answer {
  status: number;
  text: string;
}
