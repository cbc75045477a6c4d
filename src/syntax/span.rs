//! Source locations: a file id plus a byte range, the unit every error and warning points at.

/// Identifies one source text registered in a [`crate::syntax::source::SourceMap`].
pub type FileId = usize;

/// A byte range `[start, end)` inside one registered source file.
///
/// Every AST node carries one, so that errors from any later phase (semantic checks, data binding,
/// runtime domain errors in the log density) can point at the statement the user wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// The file the range belongs to.
    pub file: FileId,
    /// First byte of the range.
    pub start: usize,
    /// One past the last byte of the range.
    pub end: usize,
}

impl Span {
    /// A span covering `[start, end)` of `file`.
    pub fn new(file: FileId, start: usize, end: usize) -> Self {
        Span { file, start, end }
    }

    /// The smallest span covering both `self` and `other` (which must be in the same file).
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// The byte range, as codespan-reporting labels want it.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.start..self.end
    }
}
