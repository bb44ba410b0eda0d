//! CLI probe (placeholder, being written).
