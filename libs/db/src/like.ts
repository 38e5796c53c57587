/**
 * `text` for Prisma's `contains` / `startsWith` filters, which PostgreSQL runs as LIKE / ILIKE without escaping the
 * pattern characters: a search for "%" or "_" would match every name. Escaped with LIKE's default escape, "\".
 */
export function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}
