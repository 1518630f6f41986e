-- The share of the model budget open to unconfirmed bugs: each call records whether, when it
-- was reserved, its bug was unconfirmed (no reporter had confirmed it, no owner had promoted
-- it). Calls about unconfirmed bugs may take R2R_SPEND_UNCONFIRMED_PERCENT of the total and of
-- the hourly calls together; the rest stays open to confirmed and promoted bugs.
ALTER TABLE model_calls ADD COLUMN unconfirmed INTEGER NOT NULL DEFAULT 0;
