//! Decoders for the push protocols collectors speak. Each turns a request body
//! into a validated [`runakefli_model::PushRequest`]; none does I/O.
#![deny(missing_docs)]

pub mod loki;
