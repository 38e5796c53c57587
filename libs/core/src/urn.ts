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

export function parseUrn(value: string): Urn {
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
    throw badInput(`Invalid urn in '${field}': '${value}' (${reason})`, { field, value });
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
    throw badInput(`Invalid id in '${field}': '${given}' (${reason})`, { field, value: given });
  }
  return urn;
}
