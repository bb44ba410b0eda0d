//! Claude Code channel (being written).
