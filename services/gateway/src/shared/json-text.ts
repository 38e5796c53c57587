/**
 * An answer that is JSON text already (the evaluation worker's results): the HTTP edge writes it into the response as
 * it is, rather than parsing and serialising it again.
 */
export class JsonText {
  constructor(readonly json: string) {}
}
