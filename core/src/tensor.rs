//! Named views into a flat parameter buffer (llm.c's layout: one contiguous buffer, named
//! tensors at offsets; gradients and optimiser state mirror it).
use alloc::vec::Vec;

/// A named view into the flat parameter buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: &'static str,
    pub shape: Vec<usize>,
    pub offset: usize,
}

impl TensorInfo {
    /// Number of values.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }
    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The tensors of `shapes` laid out one after another, in order.
pub fn layout(shapes: Vec<(&'static str, Vec<usize>)>) -> Vec<TensorInfo> {
    let mut off = 0;
    shapes
        .into_iter()
        .map(|(name, shape)| {
            let t = TensorInfo {
                name,
                shape,
                offset: off,
            };
            off += t.len();
            t
        })
        .collect()
}
