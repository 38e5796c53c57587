import { findUnstorable, type EntityRegistry } from "@mdp/core";
import {
  aspectOfAction,
  entityTypeMatches,
  parseTestDefinition,
  TestDefinitionError,
  type DefinitionProblem,
  type ParsedDefinition,
} from "@mdp/metadata-tests";

/** A definition as stored: the text as written, the normalized form, and the registry's names of its entity types. */
export interface AcceptedDefinition {
  definitionText: string;
  definition: ParsedDefinition;
  onTypes: string[];
}

/**
 * Parses definition text (JSON or YAML) and checks its on.types against the entity registry. An entity type the
 * registry does not know is refused like any other definition error, naming where it is: a misspelled type would
 * otherwise make a test that silently never runs. `onTypes` holds the registry's spelling of each type, which is what
 * the evaluation worker selects tests by. Each action's aspect must be one every selected entity type has.
 */
export function acceptDefinition(text: string, registry: EntityRegistry): AcceptedDefinition {
  // The parser enforces every size limit (DEFINITION_LIMITS), the text's bytes first: one owner for the gateway and
  // the worker that loads stored definitions.
  const definition = parseTestDefinition(text);
  const known = registry.entityTypes();
  const problems: DefinitionProblem[] = [];
  // An escape in the text (\u0000, a lone \ud800) can make a value PostgreSQL's jsonb cannot hold.
  const unstorable = findUnstorable(definition, "");
  if (unstorable)
    problems.push({ path: unstorable.path, message: `contains ${unstorable.what}, which cannot be stored` });
  const onTypes = new Set<string>();
  definition.on.types.forEach((type, index) => {
    const matches = known.filter((entityType) => entityTypeMatches(type, entityType));
    if (matches.length === 0) {
      problems.push({
        path: `on.types[${index}]`,
        message: `unknown entity type '${type}' (known: ${known.join(", ")})`,
      });
    }
    for (const match of matches) onTypes.add(match);
  });
  // An action writes an aspect: every entity type the test selects must have it, or the write could not be read back.
  for (const outcome of ["passing", "failing"] as const) {
    definition.actions?.[outcome].forEach((action, index) => {
      const aspect = aspectOfAction(action.type);
      const lacking = [...onTypes].filter((type) => !registry.aspectsOf(type).has(aspect));
      if (lacking.length > 0) {
        problems.push({
          path: `actions.${outcome}[${index}].type`,
          message: `${action.type} writes ${aspect}, which entity type ${lacking.join(", ")} does not have`,
        });
      }
    });
  }
  if (problems.length > 0) throw new TestDefinitionError(problems);
  return { definitionText: text, definition, onTypes: [...onTypes] };
}
