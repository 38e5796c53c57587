/**
 * The floor of bench/outbox: @mdp/db's AspectRepository.upsert statement (libs/db/src/aspects/aspect.repository.ts)
 * without its MetadataChangeLog_v1 event, same text otherwise: keep the two in step.
 */
export const WRITE_WITHOUT_EVENT = `
         INSERT INTO aspect (urn, aspect_name, version, entity_type, value, created_by, created_via)
         SELECT d.urn, d.aspect_name, COALESCE(d.current_version, m.version, 0) + d.ordinal, d.entity_type, d.value,
                d.created_by, d.created_via
           FROM ROWS FROM (unnest($1::text[]), unnest($2::text[]), unnest($3::text[]), jsonb_array_elements($4::jsonb),
                           unnest($5::int[]), unnest($6::text[]), unnest($7::text[]), unnest($8::int[]))
                AS d(urn, aspect_name, entity_type, value, ordinal, created_by, created_via, current_version)
           LEFT JOIN LATERAL (
             SELECT max(a.version) AS version FROM aspect a
              WHERE d.current_version IS NULL AND a.urn = d.urn AND a.aspect_name = d.aspect_name
           ) m ON true`;
