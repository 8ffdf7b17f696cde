//! File formats (in progress).
