//! Small text statistics.
