//! Mock model server (placeholder, being written).
