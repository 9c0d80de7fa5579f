//! Log patterns (placeholder until Drain lands).
