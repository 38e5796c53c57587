import type { RequestHandler } from "express";
import { Kind, parse, print, visit } from "graphql";
import { PARSE_OPTIONS } from "./document-limits";

/**
 * DataHub's clients declare createAccessToken's input as CreateAccessTokenInput; this schema calls it
 * GetAccessTokenInput. GraphQL variables must name the argument's exact type, so documents using the other name have
 * their type references renamed before Apollo parses them: type references only, never a string value or a field
 * that happens to carry the name. Only documents that mention an alias at all are parsed here.
 */
const ALIASES = new Map([["CreateAccessTokenInput", "GetAccessTokenInput"]]);

export const rewriteTypeAliases: RequestHandler = (req, _res, next) => {
  const body = req.body as { query?: unknown } | undefined;
  const query = body?.query;
  if (typeof query === "string" && [...ALIASES.keys()].some((alias) => query.includes(alias))) {
    body!.query = renameTypes(query);
  }
  next();
};

function renameTypes(query: string): string {
  let document;
  try {
    // Under the same token limit as Apollo's parse; the text's bytes and nesting were checked before (document-limits).
    document = parse(query, PARSE_OPTIONS);
  } catch {
    return query; // Apollo reports the syntax error, or the token limit
  }
  let renamed = false;
  const rewritten = visit(document, {
    [Kind.NAMED_TYPE](node) {
      const target = ALIASES.get(node.name.value);
      if (!target) return undefined;
      renamed = true;
      return { ...node, name: { ...node.name, value: target } };
    },
  });
  return renamed ? print(rewritten) : query;
}
