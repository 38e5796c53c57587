// cluster-key-slot ships no types: the one function used here (ioredis's own slot computation).
declare module "cluster-key-slot" {
  /** the Redis Cluster slot (0–16383) of a key, honouring its {hash tag} */
  function calculateSlot(key: string): number;
  export = calculateSlot;
}
