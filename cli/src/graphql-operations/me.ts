/** The CLI's GraphQL documents (with-fragments.ts says how they are read): the caller: who it is and what it holds (login, whoami). */

export const ME = /* GraphQL */ `
  query Me {
    me {
      urn
      privileges
    }
  }
`;
