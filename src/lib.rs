//! bridge facade (being written).
