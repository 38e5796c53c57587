import { readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { z } from "zod";
import { badInput, notFound } from "../errors";
import { abbreviated } from "../urn";

const NAME = /^[A-Za-z][A-Za-z0-9_]*$/;
const names = z.array(z.string().regex(NAME, { error: "must be letters, digits or '_', starting with a letter" }));
const fileSchema = z.strictObject({
  entities: z.record(z.string().regex(NAME), z.strictObject({ aspects: names, timeseriesAspects: names.default([]) })),
});

export type AspectKind = "versioned" | "timeseries";

export interface TimeseriesIndex {
  /** DataHub's index name, e.g. dataset_datasetprofileaspect_v1 */
  indexName: string;
  entityType: string;
  aspectName: string;
}

/**
 * Entity types, their aspects, and which aspects are time series. Loaded and validated once at start; names are exact
 * and case-sensitive, and every refusal lists the valid names.
 */
export class EntityRegistry {
  private constructor(private readonly entities: Map<string, Map<string, AspectKind>>) {}

  static fromYaml(text: string, source: string): EntityRegistry {
    let raw: unknown;
    try {
      raw = parse(text);
    } catch (error) {
      throw new Error(`Entity registry ${source} is not valid YAML: ${(error as Error).message}`);
    }
    const parsed = fileSchema.safeParse(raw);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
      throw new Error(`Entity registry ${source} is invalid: ${problems}`);
    }
    const entities = new Map<string, Map<string, AspectKind>>();
    // A time-series aspect's rows live in a table named after "<entityType>_<aspectName>": two aspects whose names
    // join alike (ab.c_usage, ab_c.usage) would share one, and truncating one would delete the other's rows.
    const joined = new Map<string, string>();
    for (const [entityType, def] of Object.entries(parsed.data.entities)) {
      const aspects = new Map<string, AspectKind>();
      for (const name of def.aspects) aspects.set(name, "versioned");
      for (const name of def.timeseriesAspects) {
        if (aspects.has(name)) throw new Error(`Entity registry ${source}: ${entityType}.${name} is listed twice`);
        aspects.set(name, "timeseries");
        const other = joined.get(`${entityType}_${name}`);
        if (other) {
          throw new Error(
            `Entity registry ${source}: time-series aspects ${other} and ${entityType}.${name} would be stored in one ` +
              `table (their names joined with '_' are alike); rename one of them`,
          );
        }
        joined.set(`${entityType}_${name}`, `${entityType}.${name}`);
        // DataHub's index names are lower case, so its clients may spell an aspect so (datahub-gc sends
        // datasetusagestatistics): two aspects alike but for case would make that spelling mean either.
        const sameButCase = def.timeseriesAspects.find((o) => o !== name && o.toLowerCase() === name.toLowerCase());
        if (sameButCase) {
          throw new Error(
            `Entity registry ${source}: time-series aspects ${entityType}.${sameButCase} and ${entityType}.${name} ` +
              `differ only in letter case; rename one of them`,
          );
        }
      }
      entities.set(entityType, aspects);
    }
    return new EntityRegistry(entities);
  }

  /** The registry at ENTITY_REGISTRY_PATH, or the built-in default. */
  static load(registryPath?: string): EntityRegistry {
    const file = registryPath ?? path.join(__dirname, "default-entity-registry.yaml");
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (error) {
      throw new Error(`Entity registry ${file} cannot be read: ${(error as Error).message}`);
    }
    return EntityRegistry.fromYaml(text, file);
  }

  entityTypes(): string[] {
    return [...this.entities.keys()];
  }

  /** The aspect's kind; throws BAD_USER_INPUT naming the field and the valid entity types or aspects. */
  aspectKind(
    entityType: string,
    aspectName: string,
    fields = { entityType: "entityType", aspectName: "aspectName" },
  ): AspectKind {
    const aspects = this.aspectsOf(entityType, fields.entityType);
    const kind = aspects.get(aspectName);
    if (!kind) {
      throw badInput(
        `Unknown aspect '${abbreviated(aspectName)}' in '${fields.aspectName}' for entity type ${entityType}; valid aspects: ${[...aspects.keys()].join(", ")}`,
      );
    }
    return kind;
  }

  aspectsOf(entityType: string, field = "entityType"): Map<string, AspectKind> {
    const aspects = this.entities.get(entityType);
    if (!aspects) {
      throw badInput(
        `Unknown entity type '${abbreviated(entityType)}' in '${field}'; valid entity types: ${this.entityTypes().join(", ")}`,
      );
    }
    return aspects;
  }

  /** Every registered time-series aspect, as an index. */
  timeseriesIndexes(): TimeseriesIndex[] {
    const result: TimeseriesIndex[] = [];
    for (const [entityType, aspects] of this.entities) {
      for (const [aspectName, kind] of aspects) {
        if (kind === "timeseries") result.push(timeseriesIndex(entityType, aspectName));
      }
    }
    return result;
  }

  /**
   * The time-series index for entityType + aspect; NOT_FOUND listing the known ones when it is not registered. The
   * aspect may be spelled in lower case, as DataHub's index names have it (datasetusagestatistics): that spelling
   * means the one registered time-series aspect of the entity type it lowercases to (the loader refuses two alike but
   * for case). The entity type is exact.
   */
  timeseriesIndex(entityType: string, aspectName: string): TimeseriesIndex {
    const aspects = this.entities.get(entityType);
    if (aspects && aspects.get(aspectName) !== "timeseries" && aspectName === aspectName.toLowerCase()) {
      for (const [name, kind] of aspects) {
        if (kind === "timeseries" && name.toLowerCase() === aspectName) return timeseriesIndex(entityType, name);
      }
    }
    if (aspects?.get(aspectName) !== "timeseries") {
      const known = this.timeseriesIndexes().map((i) => `${i.entityType}/${i.aspectName}`);
      throw notFound(
        `No time-series aspect '${abbreviated(aspectName)}' for entity type '${abbreviated(entityType)}'; known: ${known.join(", ")}`,
      );
    }
    return timeseriesIndex(entityType, aspectName);
  }
}

function timeseriesIndex(entityType: string, aspectName: string): TimeseriesIndex {
  return { indexName: `${entityType.toLowerCase()}_${aspectName.toLowerCase()}aspect_v1`, entityType, aspectName };
}
