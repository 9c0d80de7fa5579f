//! Loki's push API: `POST /loki/api/v1/push`.

pub mod proto;
