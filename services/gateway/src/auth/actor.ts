/** Who is making a request, as established by authentication. */
export interface Actor {
  /** the user urn the request acts for */
  urn: string;
  /** how the caller proved it: an access token, the trusted system client, or (development only) the header alone */
  via: "token" | "system" | "header";
  /** the access token's id when via = "token" */
  tokenId?: string;
}
