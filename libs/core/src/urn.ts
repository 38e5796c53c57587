import { badInput } from "./errors";

/**
 * A parsed URN: `urn:<namespace>:<entityType>:<id>`. The id may be a tuple, e.g.
 * `urn:li:dataset:(urn:li:dataPlatform:hive,db.table,PROD)`, whose parts may themselves be URNs with colons and
 * parentheses, so parsing walks the string instead of splitting on ':'.
 */
export interface Urn {
  namespace: string;
  entityType: string;
  /** the raw id as written, tuple parentheses included */
  id: string;
  /** tuple parts, or a single-element list for a plain id */
  idParts: string[];
}

const NAME = /^[A-Za-z][A-Za-z0-9_-]*$/;
/** No URN carries one; NUL could not even be stored. */
// eslint-disable-next-line no-control-regex -- control characters are exactly what this looks for
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

export class UrnParseError extends Error {}

/**
 * The longest urn accepted, in bytes once URL-encoded: DataHub's limit (UrnValidationUtil.URN_NUM_BYTES_LIMIT), so
 * every urn a DataHub client can write fits, and well under what one PostgreSQL btree index row can hold (~2,700
 * bytes, the urn with the other key columns), which a longer urn would fail on as an internal error.
 */
export const MAX_URN_BYTES = 512;

/** The longest id (taskId, tokenId, ...) accepted, in characters: ids this service issues are UUIDs (36). */
export const MAX_ID_LENGTH = 256;

/** Bytes of `value` URL-encoded as DataHub measures it (java.net.URLEncoder: `A-Za-z0-9.-*_` and space stay one). */
export function urlEncodedBytes(value: string): number {
  let bytes = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (
      (c >= 48 && c <= 57) || // 0-9
      (c >= 65 && c <= 90) || // A-Z
      (c >= 97 && c <= 122) || // a-z
      c === 46 || // .
      c === 45 || // -
      c === 42 || // *
      c === 95 || // _
      c === 32 // space, as '+'
    ) {
      bytes += 1;
    } else if (c < 0x80) bytes += 3;
    else if (c < 0x800) bytes += 6;
    else if (c >= 0xd800 && c <= 0xdbff) {
      bytes += 12; // a surrogate pair: one 4-byte character
      i++;
    } else bytes += 9;
  }
  return bytes;
}

/** A value for an error message: a value of kilobytes would make one of kilobytes. */
export function abbreviated(value: string, max = 100): string {
  return value.length > max ? `${value.slice(0, max)}…` : value;
}

export function parseUrn(value: string): Urn {
  // First, so nothing below ever walks a long value. Each character encodes to at least one byte.
  if (value.length > MAX_URN_BYTES || urlEncodedBytes(value) > MAX_URN_BYTES) {
    throw new UrnParseError(`longer than the limit of ${MAX_URN_BYTES} bytes URL-encoded`);
  }
  if (!value.startsWith("urn:")) throw new UrnParseError("must start with 'urn:'");
  if (CONTROL_CHARACTER.test(value)) throw new UrnParseError("contains a control character");
  if (!value.isWellFormed()) throw new UrnParseError("contains an unpaired surrogate, which is no character");
  const afterScheme = value.slice(4);
  const first = afterScheme.indexOf(":");
  if (first <= 0) throw new UrnParseError("missing namespace");
  const namespace = afterScheme.slice(0, first);
  const rest = afterScheme.slice(first + 1);
  const second = rest.indexOf(":");
  if (second <= 0) throw new UrnParseError("missing entity type");
  const entityType = rest.slice(0, second);
  const id = rest.slice(second + 1);
  if (!NAME.test(namespace)) throw new UrnParseError(`invalid namespace '${namespace}'`);
  if (!NAME.test(entityType)) throw new UrnParseError(`invalid entity type '${entityType}'`);
  if (id.length === 0) throw new UrnParseError("missing id");
  return { namespace, entityType, id, idParts: parseId(id) };
}

function parseId(id: string): string[] {
  if (id.charCodeAt(0) !== OPEN) {
    if (id.includes("(") || id.includes(")")) throw new UrnParseError("unbalanced parentheses in id");
    return [id];
  }
  if (id.charCodeAt(id.length - 1) !== CLOSE) throw new UrnParseError("tuple id must end with ')'");
  // Split the tuple at top-level commas; parts are sliced, not built character by character (ingestion parses
  // thousands of urns per request).
  const parts: string[] = [];
  let depth = 0;
  let start = 1;
  for (let i = 1; i < id.length - 1; i++) {
    const c = id.charCodeAt(i);
    if (c === OPEN) depth++;
    else if (c === CLOSE && --depth < 0) throw new UrnParseError("unbalanced parentheses in id");
    else if (c === COMMA && depth === 0) {
      parts.push(id.slice(start, i));
      start = i + 1;
    }
  }
  if (depth !== 0) throw new UrnParseError("unbalanced parentheses in id");
  parts.push(id.slice(start, id.length - 1));
  if (parts.some((p) => p.length === 0)) throw new UrnParseError("empty tuple element");
  return parts;
}

const OPEN = 40; // (
const CLOSE = 41; // )
const COMMA = 44; // ,

/** Parses a URN given as input field `field`; a malformed one is a BAD_USER_INPUT naming the field and the value. */
export function parseUrnField(field: string, value: string, expectedEntityType?: string): Urn {
  let urn: Urn;
  try {
    urn = parseUrn(value);
  } catch (error) {
    const reason = error instanceof UrnParseError ? error.message : "malformed";
    throw badInput(`Invalid urn in '${field}': '${abbreviated(value)}' (${reason})`, {
      field,
      value: abbreviated(value),
    });
  }
  if (expectedEntityType && urn.entityType !== expectedEntityType) {
    throw badInput(`Invalid urn in '${field}': '${value}' is not a ${expectedEntityType} urn`, { field, value });
  }
  return urn;
}

export function makeUrn(namespace: string, entityType: string, id: string): string {
  return `urn:${namespace}:${entityType}:${id}`;
}

/**
 * The urn of a new entity whose id the caller may give as input field `field`: `generate()`'s id when it is left out
 * or blank (forms send "" for an empty field). An id no urn can hold is a BAD_USER_INPUT naming the field and the id
 * as given, not the urn made of it.
 */
export function urnOfNewId(
  field: string,
  given: string | null | undefined,
  { namespace, entityType, generate }: { namespace: string; entityType: string; generate: () => string },
): string {
  const id = given?.trim() || generate();
  const urn = makeUrn(namespace, entityType, id);
  try {
    parseUrn(urn);
  } catch (error) {
    const reason = error instanceof UrnParseError ? error.message : "malformed";
    throw badInput(`Invalid id in '${field}': '${abbreviated(given ?? "")}' (${reason})`, {
      field,
      value: abbreviated(given ?? ""),
    });
  }
  return urn;
}

/**
 * Refuses an id given as input field `field` (a taskId, a tokenId) longer than MAX_ID_LENGTH: no id this service
 * issues is, and one of kilobytes would reach a database lookup. A BAD_USER_INPUT naming the field and the limit.
 */
export function requireIdLength(field: string, value: string): void {
  if (value.length > MAX_ID_LENGTH) {
    throw badInput(`${field} is longer than the limit of ${MAX_ID_LENGTH} characters`, { field, limit: MAX_ID_LENGTH });
  }
}
