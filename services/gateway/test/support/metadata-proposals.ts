/** What metadata-ingestion and metadata-pushers share: the entities and aspects they ingest. */

export const DATASET = "urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)";
export const INGESTER = "urn:li:corpuser:ingester";

export const proposal = (over: Record<string, unknown> = {}, value: unknown = { description: "orders" }) => ({
  entityType: "dataset",
  entityUrn: DATASET,
  aspectName: "datasetProperties",
  changeType: "UPSERT",
  aspect: { contentType: "application/json", value: JSON.stringify(value) },
  ...over,
});
export const profile = (timestampMillis: number, urn = DATASET) =>
  proposal({ aspectName: "datasetProfile", entityUrn: urn }, { timestampMillis, rowCount: timestampMillis % 1000 });
