import { z } from "zod";

/** The zod helpers the settings are written with: each refusal reads "VARIABLE must be ...". */

export const bool = z.enum(["true", "false"], { error: "must be 'true' or 'false'" }).transform((v) => v === "true");
export const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, { error: "must be a whole number" })
    .transform(Number)
    .pipe(
      z
        .number()
        .min(min, { error: `must be at least ${min}` })
        .max(max, { error: `must be at most ${max}` }),
    );
export const url = (protocols: string[]) =>
  z.string().refine(
    (v) => {
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    { error: `must be a URL starting with ${protocols.map((p) => `${p}//`).join(" or ")}` },
  );
