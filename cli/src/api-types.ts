/**
 * The HTTP actions' request and answer types, read from generated/openapi.ts (`pnpm cli:types`, from
 * docs/api/openapi.json). An action is named by its key in that document, whose server is /gms:
 * `/operations?action=getTaskStatus` is `POST /gms/operations?action=getTaskStatus`.
 */
import type { paths } from "./generated/openapi";

export type ActionKey = { [K in keyof paths]: K extends `${string}?action=${string}` ? K : never }[keyof paths];

type Post<K extends ActionKey> = paths[K]["post"];

/** The JSON body an action takes. */
export type ActionRequest<K extends ActionKey> = NonNullable<Post<K>["requestBody"]>["content"]["application/json"];

/** The `value` an action answers. */
export type ActionAnswer<K extends ActionKey> = Post<K>["responses"][200]["content"]["application/json"]["value"];

/** An action's whole answer: `value`, and the fields some answer beside it (a dry run's `plan`). */
export type ActionEnvelope<K extends ActionKey> = Post<K>["responses"][200]["content"]["application/json"];
