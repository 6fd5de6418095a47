//! Placeholder: the owner of this probe replaces it.
