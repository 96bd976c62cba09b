//! The Message Translator.
