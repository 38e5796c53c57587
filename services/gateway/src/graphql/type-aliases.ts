import type { RequestHandler } from "express";

/**
 * DataHub's clients declare createAccessToken's input as CreateAccessTokenInput; the seed spec calls it
 * GetAccessTokenInput. GraphQL variables must name the argument's exact type, so documents using the other name are
 * rewritten before Apollo parses them.
 */
const ALIASES: Array<[RegExp, string]> = [[/\bCreateAccessTokenInput\b/g, "GetAccessTokenInput"]];

export const rewriteTypeAliases: RequestHandler = (req, _res, next) => {
  const body = req.body as { query?: unknown } | undefined;
  if (body && typeof body.query === "string") {
    let query = body.query;
    for (const [pattern, replacement] of ALIASES) query = query.replace(pattern, replacement);
    body.query = query;
  }
  next();
};
