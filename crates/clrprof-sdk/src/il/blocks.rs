//! Basic blocks: maximal runs of instructions entered only at their first instruction and
//! left only after their last.

use super::instruction::{Label, Operand};
use super::method::{Handler, Method};
use super::opcodes::Flow;

/// A basic block: instructions `start..end` of [`Method::instructions`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct BasicBlock {
    /// Index of its first instruction.
    pub start: usize,
    /// Index after its last instruction.
    pub end: usize,
}

/// The basic blocks of `method`, in code order.
///
/// A block starts at the first instruction, at every branch or switch target, after every
/// instruction that branches, returns or throws, and at every exception clause boundary
/// (try, handler and filter starts, and the first instruction after a try or handler). An
/// instruction right after a prefix (`tail.`, `constrained.`, ...) never starts a block: the
/// prefix and it are one instruction.
pub fn basic_blocks(method: &Method) -> Vec<BasicBlock> {
    let n = method.instructions.len();
    if n == 0 {
        return Vec::new();
    }
    let labels = method.label_indexes();
    let mut leader = vec![false; n + 1];
    leader[0] = true;
    let mark = |l: &Label, leader: &mut Vec<bool>| {
        if let Some(&i) = labels.get(l) {
            leader[i] = true;
        }
    };
    for (i, ins) in method.instructions.iter().enumerate() {
        let flow = ins.opcode.info().map_or(Flow::Next, |info| info.flow);
        match &ins.operand {
            Operand::Target(l) => mark(l, &mut leader),
            Operand::Switch(ls) => ls.iter().for_each(|l| mark(l, &mut leader)),
            _ => {}
        }
        if matches!(
            flow,
            Flow::Branch | Flow::CondBranch | Flow::Return | Flow::Throw
        ) {
            leader[i + 1] = true;
        }
    }
    for c in &method.clauses {
        for l in [c.try_start, c.try_end, c.handler_start, c.handler_end] {
            mark(&l, &mut leader);
        }
        if let Handler::Filter(l) = c.handler {
            mark(&l, &mut leader);
        }
    }
    for (i, pair) in method.instructions.windows(2).enumerate() {
        if pair[0]
            .opcode
            .info()
            .is_some_and(|info| info.flow == Flow::Prefix)
        {
            leader[i + 1] = false;
        }
    }
    let starts: Vec<usize> = (0..n).filter(|&i| leader[i]).collect();
    starts
        .iter()
        .enumerate()
        .map(|(k, &start)| BasicBlock {
            start,
            end: starts.get(k + 1).copied().unwrap_or(n),
        })
        .collect()
}
