import { z } from "zod";
import {
  abbreviated,
  badInput,
  forbidden,
  MAX_NESTING,
  parseUrnField,
  refuseUnstorable,
  SERVICE_WRITTEN_ASPECTS,
  type EntityRegistry,
} from "@mdp/core";
import type { TimeseriesRow, VersionedAspectWrite } from "@mdp/db";

/** 9999-12-31T23:59:59.999Z */
const MAX_TIMESTAMP_MILLIS = 253_402_300_799_999;
/** A JSON escape of NUL or of a UTF-16 surrogate. */
const ESCAPED_UNSTORABLE = /\\u(?:0000|[dD][89a-fA-F])/;

/**
 * The most a proposal's systemMetadata may weigh as JSON text: it is kept with every version and row it comes with,
 * and DataHub's emitters send a few hundred bytes (lastObserved, runId, lastRunId, a few properties).
 */
export const MAX_SYSTEM_METADATA_BYTES = 8 * 1024;
/** Entries of a proposal's headers map, and the length of each name and value. */
export const MAX_PROPOSAL_HEADERS = 32;
export const MAX_PROPOSAL_HEADER_LENGTH = 1024;
/**
 * DataHub's conditional writes (a proposal header naming the version or time the writer expects): this service
 * writes unconditionally, so a proposal carrying one is refused rather than written as if it had been honoured.
 */
const CONDITIONAL_WRITE_HEADERS = ["If-Version-Match", "If-Modified-Since", "If-Unmodified-Since"];

/** DataHub's SystemMetadata (mxe/SystemMetadata.pdl): lastObserved, runId, lastRunId, properties, ...; kept as sent. */
export const systemMetadataSchema = z
  .record(z.string(), z.unknown())
  .refine((value) => Buffer.byteLength(JSON.stringify(value), "utf8") <= MAX_SYSTEM_METADATA_BYTES, {
    error: `must be at most ${MAX_SYSTEM_METADATA_BYTES} bytes as JSON (MAX_SYSTEM_METADATA_BYTES)`,
  });

/** DataHub's MetadataChangeProposal headers (map<string, string>): bounded, and no conditional write among them. */
export const proposalHeadersSchema = z
  .record(
    z.string().max(MAX_PROPOSAL_HEADER_LENGTH, {
      error: `a header name must be at most ${MAX_PROPOSAL_HEADER_LENGTH} characters`,
    }),
    z.string().max(MAX_PROPOSAL_HEADER_LENGTH, {
      error: `a header value must be at most ${MAX_PROPOSAL_HEADER_LENGTH} characters`,
    }),
  )
  .refine((headers) => Object.keys(headers).length <= MAX_PROPOSAL_HEADERS, {
    error: `must hold at most ${MAX_PROPOSAL_HEADERS} headers`,
  })
  .superRefine((headers, ctx) => {
    for (const name of Object.keys(headers)) {
      const conditional = CONDITIONAL_WRITE_HEADERS.find((h) => h.toLowerCase() === name.toLowerCase());
      if (conditional) {
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: `${conditional} is not supported: writes here are unconditional, so a conditional one is refused`,
        });
      }
    }
  });

/**
 * DataHub's MetadataChangeProposal (mxe/MetadataChangeProposal.pdl) as its emitters send it: every field of DataHub's
 * schema is accepted, and a field outside it is refused. What each means here: `systemMetadata` is kept with the
 * version or row written (GET /gms/entities `stamps`, getTimeseriesAspectValues); `auditHeader` (Kafka's envelope) and
 * `entityKeyAspect` (the key as an aspect, redundant beside `entityUrn`, which is required here) are accepted and not
 * kept; `headers` are accepted (X-DataHub-Sync-Index-Update asks for what every write here is: committed before the
 * answer), but for DataHub's conditional writes, which are refused.
 */
export const proposalSchema = z.strictObject({
  auditHeader: z.record(z.string(), z.unknown()).nullish(),
  entityType: z.string().min(1),
  entityUrn: z.string().min(1),
  entityKeyAspect: z.unknown().optional(),
  changeType: z.string().min(1),
  aspectName: z.string().min(1),
  aspect: z.strictObject({ contentType: z.string(), value: z.string() }),
  systemMetadata: systemMetadataSchema.nullish(),
  headers: proposalHeadersSchema.nullish(),
});

/**
 * The `async` parameter of DataHub's ingestProposal and ingestProposalBatch (Rest.li `@ActionParam("async")`, which
 * its emitters send as the text "true" or "false"). Either way the write is committed before the answer: there is no
 * queue between the request and the database here, so an asynchronous write would be no faster.
 */
export const asyncFlag = z
  .union([z.enum(["true", "false"]), z.boolean()])
  .optional()
  .describe('DataHub\'s async flag ("true"/"false"): accepted; writes are always committed before the answer');

export type Proposal = z.output<typeof proposalSchema>;

export type ValidatedProposal =
  | { kind: "versioned"; write: VersionedAspectWrite }
  | { kind: "timeseries"; entityType: string; aspectName: string; row: TimeseriesRow };

/**
 * Checks one proposal against the registry; `at` names it in errors (e.g. "proposals[3]"). Every refusal says which
 * field is wrong and why, so a client can fix the request without guessing. A value echoed in a message is abbreviated
 * (any field may be nearly as long as the body), or has passed a check that bounds it (the urn's parse).
 */
export function validateProposal(p: Proposal, at: string, registry: EntityRegistry): ValidatedProposal {
  if (p.changeType !== "UPSERT") {
    throw badInput(`${at}.changeType '${abbreviated(p.changeType)}' is not supported; only UPSERT is`);
  }
  const kind = registry.aspectKind(p.entityType, p.aspectName, {
    entityType: `${at}.entityType`,
    aspectName: `${at}.aspectName`,
  });
  // The entity type was found in the registry above, and a parsed urn is at most MAX_URN_BYTES: both are short.
  const urnType = parseUrnField(`${at}.entityUrn`, p.entityUrn).entityType;
  if (urnType !== p.entityType) {
    throw badInput(`${at}.entityUrn '${p.entityUrn}' is a ${urnType} urn, but ${at}.entityType is '${p.entityType}'`);
  }
  if (p.aspect.contentType !== "application/json") {
    throw badInput(`${at}.aspect.contentType must be application/json, not '${abbreviated(p.aspect.contentType)}'`);
  }
  let value: unknown;
  try {
    value = JSON.parse(p.aspect.value);
  } catch {
    throw badInput(`${at}.aspect.value is not valid JSON`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw badInput(`${at}.aspect.value must be a JSON object`);
  }
  // The text itself was checked with the request's body; only an escape in it (\u0000, or a surrogate's \ud800 to
  // \udfff) can put what cannot be stored into the value, and only a long text can nest deeper than MAX_NESTING (two
  // characters a level), which PostgreSQL would refuse as a 500. The walk is for those texts.
  if (p.aspect.value.length > 2 * MAX_NESTING || ESCAPED_UNSTORABLE.test(p.aspect.value)) {
    refuseUnstorable(value, `${at}.aspect.value`);
  }
  // Kept as sent, beside the value (DataHub keeps it with each version): validated by the schema, bounded in size.
  const systemMetadataJson = p.systemMetadata != null ? JSON.stringify(p.systemMetadata) : undefined;
  const kept = systemMetadataJson !== undefined ? { systemMetadataJson } : {};
  if (kind === "versioned") {
    return {
      kind,
      write: {
        urn: p.entityUrn,
        entityType: p.entityType,
        aspectName: p.aspectName,
        valueJson: p.aspect.value,
        ...kept,
      },
    };
  }
  const timestampMillis = (value as { timestampMillis?: unknown }).timestampMillis;
  if (typeof timestampMillis !== "number" || !Number.isSafeInteger(timestampMillis) || timestampMillis < 0) {
    throw badInput(
      `${at}.aspect.value of time-series aspect ${p.aspectName} must carry timestampMillis, a whole number of epoch milliseconds`,
    );
  }
  // Rows live in day partitions named by date: a date past year 9999 has no four-digit name (nor any a Date can give).
  if (timestampMillis > MAX_TIMESTAMP_MILLIS) {
    throw badInput(
      `${at}.aspect.value.timestampMillis ${timestampMillis} is after the last supported instant, ` +
        `${new Date(MAX_TIMESTAMP_MILLIS).toISOString()} (${MAX_TIMESTAMP_MILLIS})`,
    );
  }
  return {
    kind,
    entityType: p.entityType,
    aspectName: p.aspectName,
    row: { urn: p.entityUrn, timestampMillis, valueJson: p.aspect.value, ...kept },
  };
}

/**
 * FORBIDDEN when the proposal would write an aspect only the service writes (SERVICE_WRITTEN_ASPECTS), naming it and
 * where it is (`at`, e.g. "proposals[3]"). A 403 as in DataHub, which refuses writes of restricted aspects as
 * "unauthorized": no privilege grants it, the root user's included.
 */
export function refuseServiceWrittenAspect(p: Proposal, at: string, actorUrn: string): void {
  const writer = SERVICE_WRITTEN_ASPECTS.get(p.aspectName);
  if (writer === undefined) return;
  throw forbidden(
    `${actorUrn} is unauthorized to ingest aspect ${p.aspectName} (${at}.aspectName): only the service writes it, ` +
      `through ${writer}`,
  );
}

/** PostgreSQL's numeric keeps at most this many digits before the decimal point, and this many after it. */
const NUMERIC_DIGITS = { before: 131_072, after: 16_383 };
const NUMBER = /-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?/y;

/**
 * The first number in the JSON text `json` that PostgreSQL's jsonb cannot store (1e-99999, which JSON allows), or
 * undefined. Strings are skipped: only numbers outside them count. For naming the value after PostgreSQL refused it.
 */
export function numberPostgresCannotStore(json: string): string | undefined {
  for (let i = 0; i < json.length; i++) {
    const c = json[i]!;
    if (c === '"') {
      for (i++; i < json.length && json[i] !== '"'; i++) if (json[i] === "\\") i++;
    } else if (c === "-" || (c >= "0" && c <= "9")) {
      NUMBER.lastIndex = i;
      const match = NUMBER.exec(json)!;
      const [whole, fraction, exponent] = [match[1]!, match[2] ?? "", Number(match[3] ?? 0)];
      // Digits before the point count from the first significant one (0.5e131072 is 5 followed by 131071 zeros);
      // after it, as written (PostgreSQL keeps the scale given).
      const significant = (whole + fraction).replace(/^0+/, "");
      const before = significant === "" ? 0 : significant.length - fraction.length + exponent;
      if (before > NUMERIC_DIGITS.before || fraction.length - exponent > NUMERIC_DIGITS.after) {
        return match[0].length > 40 ? `${match[0].slice(0, 40)}…` : match[0];
      }
      i += match[0].length - 1;
    }
  }
  return undefined;
}
