import { defineConfig } from "prisma/config";

// DATABASE_URL is read directly: prisma's env() helper makes `generate` fail when it is unset.
export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  datasource: { url: process.env.DATABASE_URL ?? "postgresql://localhost:5432/metadata_admin" },
});
