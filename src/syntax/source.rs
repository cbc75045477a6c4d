//! The registry of source texts (model files, stdlib modules, REPL inputs) that spans refer to.

use codespan_reporting::files::SimpleFiles;

use super::span::FileId;

/// All source texts of a session. A thin wrapper over codespan's `SimpleFiles`, so that
/// diagnostics from every phase render against the same registry.
#[derive(Default)]
pub struct SourceMap {
    files: SimpleFiles<String, String>,
}

impl SourceMap {
    /// An empty registry.
    pub fn new() -> Self {
        SourceMap {
            files: SimpleFiles::new(),
        }
    }

    /// Registers a source text under a display `name` (usually its path) and returns its id.
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        self.files.add(name.into(), text.into())
    }

    /// The source text of `id`.
    ///
    /// Panics if `id` was not returned by [`SourceMap::add`] on this map (an internal bug).
    pub fn text(&self, id: FileId) -> &str {
        self.files
            .get(id)
            .expect("file id comes from this SourceMap")
            .source()
    }

    /// The display name of `id` (same panic contract as [`SourceMap::text`]).
    pub fn name(&self, id: FileId) -> &str {
        self.files
            .get(id)
            .expect("file id comes from this SourceMap")
            .name()
    }

    /// The codespan file database, for rendering diagnostics.
    pub fn files(&self) -> &SimpleFiles<String, String> {
        &self.files
    }
}
