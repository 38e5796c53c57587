import { parseUrn } from "@mdp/core";
import type { EntitySnapshot } from "./entity.types";
import { resolvePath, type ResolvedValues } from "./property-path";

/**
 * The values of a predicate's property on an entity. `urn`, `entityType` and `platform` are facts about the entity
 * itself; any other property is a dot path whose first segment names an aspect.
 */
export function resolveProperty(entity: EntitySnapshot, property: string): ResolvedValues {
  switch (property) {
    case "urn":
      return single(entity.urn);
    case "entityType":
      return single(entity.entityType);
    case "platform":
      return single(platformOf(entity));
    default:
      return resolvePath(entity.aspects, property);
  }
}

function single(value: string | undefined): ResolvedValues {
  return { values: value === undefined ? [] : [value], fannedOut: false };
}

/**
 * A dataset's platform is part of its urn (`urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)`), so it is known
 * even before any aspect is ingested; other entities carry it in their dataPlatformInstance aspect, if at all.
 */
function platformOf(entity: EntitySnapshot): string | undefined {
  if (entity.entityType === "dataset") {
    const fromUrn = datasetPlatform(entity.urn);
    if (fromUrn) return fromUrn;
  }
  const [platform] = resolvePath(entity.aspects, "dataPlatformInstance.platform").values;
  return typeof platform === "string" ? platform : undefined;
}

/**
 * dataset urn → its platform (null: none), for the entities being evaluated: every test naming `platform` parsed the
 * urn twice again. Bounded; a urn is immutable, so an entry is never stale.
 */
const platforms = new Map<string, string | null>();
const MAX_PLATFORMS = 1024;

function datasetPlatform(urn: string): string | undefined {
  let platform = platforms.get(urn);
  if (platform === undefined) {
    platform = platformInUrn(urn) ?? null;
    if (platforms.size >= MAX_PLATFORMS) platforms.clear();
    platforms.set(urn, platform);
  }
  return platform ?? undefined;
}

function platformInUrn(urn: string): string | undefined {
  try {
    const [first] = parseUrn(urn).idParts;
    return first !== undefined && parseUrn(first).entityType === "dataPlatform" ? first : undefined;
  } catch {
    return undefined; // not a well-formed dataset urn: fall back to the aspect
  }
}
