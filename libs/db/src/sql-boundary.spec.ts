import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

/**
 * SQL lives in @mdp/db's repositories (README "Repositories"): services, processors, the other libs and the scripts
 * call repository functions, never Prisma or pg themselves. This reads their sources (tests and specs excluded: they
 * set up and inspect rows as they like) and lists every line that runs a statement.
 */
const ROOT = path.resolve(__dirname, "../../..");
const SCANNED = ["services", "libs", "scripts"];

/** What running SQL looks like outside a repository. */
const PATTERNS: ReadonlyArray<[string, RegExp]> = [
  ["$queryRaw", /\$queryRaw/],
  ["$executeRaw", /\$executeRaw/],
  ["$transaction", /\$transaction\b/],
  ["pg .query(", /\.query\(/],
  // a call on the client (its $connect and $disconnect aside) or on one of its models; not a name like prisma.config.ts
  ["prisma.", /\bprisma\.(?!\$(dis)?connect\b)(\$\w+|[a-z]\w*\.\w+\()/],
  [
    "a model delegate",
    /\.(accessToken|policy|group|groupMember|aspect|metadataTest|testResultTransition|task|auditEvent|retentionPolicy)\.(findUnique|findUniqueOrThrow|findFirst|findFirstOrThrow|findMany|create|createMany|createManyAndReturn|update|updateMany|updateManyAndReturn|upsert|delete|deleteMany|count|aggregate|groupBy)\(/,
  ],
];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      return ["node_modules", "generated", "dist", "test"].includes(entry.name) ? [] : sources(full);
    }
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".spec.ts") ? [full] : [];
  });
}

/** `file:line: what` for each line of `text` that runs SQL. */
function offenders(file: string, text: string): string[] {
  return text
    .split("\n")
    .flatMap((line, i) =>
      PATTERNS.filter(([, pattern]) => pattern.test(line)).map(([what]) => `${file}:${i + 1}: ${what}: ${line.trim()}`),
    );
}

describe("SQL stays in @mdp/db", () => {
  const scanned = SCANNED.flatMap((dir) => sources(path.join(ROOT, dir)))
    .map((full) => path.relative(ROOT, full).split(path.sep).join("/"))
    .filter((file) => !file.startsWith("libs/db/"));
  const found = new Map(scanned.map((file) => [file, offenders(file, readFileSync(path.join(ROOT, file), "utf8"))]));

  it("finds no statement outside its repositories", () => {
    const outside = [...found].flatMap(([, lines]) => lines);
    expect(outside).toEqual([]);
  });

  it("recognises each way of running SQL, and not a repository call", () => {
    const sample = [
      "await tx.accessToken.create({ data });",
      "await this.prisma.policy.findMany();",
      "await tx.$queryRaw`SELECT 1`;",
      "await tx.$executeRawUnsafe(text);",
      "await client.query('SELECT 1');",
      "await this.db.prisma.$transaction(async (tx) => {});",
    ].join("\n");
    expect(offenders("sample.ts", sample).map((line) => line.split(":")[1])).toEqual([
      "1",
      "2",
      "2",
      "3",
      "4",
      "5",
      "6",
      "6",
    ]);
    const calls = [
      "await inPrismaTransaction(this.prisma, (tx) => insertPolicy(tx, row));",
      "await db.prisma.$disconnect();",
      'const cli = "run by prisma.config.ts";',
    ];
    expect(offenders("sample.ts", calls.join("\n"))).toEqual([]);
  });
});
