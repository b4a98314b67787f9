-- A batch.completed delivery's data (the batch's id, total and counts),
-- a column of its own, written by the completion of the batch's last
-- job; the event's bytes are made from it when it is read. The releases
-- before it stored the data as the payload, a zero byte then JSON:
-- those rows are read as they lie.
-- {schema} is replaced by the quoted schema name.
ALTER TABLE {schema}.webhook_deliveries ADD COLUMN batch jsonb;
