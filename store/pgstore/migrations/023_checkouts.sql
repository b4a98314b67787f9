-- Checkouts the service opened to sell credit packs: the payment
-- provider's id, the account the credits go to and the pack sold, written
-- when the checkout is opened and read when its payment is confirmed.
-- Rows are never changed; the grant itself is a ledger entry keyed by
-- the checkout's id.
CREATE TABLE {schema}.checkouts (
    id         text PRIMARY KEY,
    account    text NOT NULL,
    credits    bigint NOT NULL CHECK (credits > 0),
    price      bigint NOT NULL CHECK (price > 0),
    currency   text NOT NULL,
    plan       text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);
