//! What function-level tracing remembers of a code object once it has decided on it: traced
//! or not, its region, its kind (a plain function or one that suspends and resumes), and,
//! for 3.11, where its frame first starts. Packed in one word, the value the tracer keeps in
//! the code object's `co_extra` slot, tagged with the recording's generation so a later
//! recording decides afresh.

/// `co_flags` bits of generator-like code (a call that suspends and resumes).
pub const CO_GENERATOR: i64 = 0x20;
pub const CO_COROUTINE: i64 = 0x80;
pub const CO_ITERABLE_COROUTINE: i64 = 0x100;
pub const CO_ASYNC_GENERATOR: i64 = 0x200;

/// Region bits of a decision meaning "not traced".
pub const SKIP: u32 = u32::MAX;

/// Kind of a traced code object.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Plain = 0,
    Generator = 1,
    Coroutine = 2,
    AsyncGenerator = 3,
}

impl Kind {
    /// The kind of a code object from its `co_flags`.
    pub fn from_flags(flags: i64) -> Kind {
        if flags & CO_ASYNC_GENERATOR != 0 {
            Kind::AsyncGenerator
        } else if flags & (CO_COROUTINE | CO_ITERABLE_COROUTINE) != 0 {
            Kind::Coroutine
        } else if flags & CO_GENERATOR != 0 {
            Kind::Generator
        } else {
            Kind::Plain
        }
    }
}

/// A decision packed in a word: generation (16 bits) | resume0 (14 bits, the code unit of
/// the `RESUME 0` that starts the frame, for 3.11) | kind (2) | region (32). Generation 0
/// is never used, so an all-zero word is "undecided".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision(pub u64);

impl Decision {
    #[inline]
    pub fn new(generation: u64, region: u32, kind: Kind, resume0: u32) -> Self {
        Decision((generation & 0xFFFF) << 48 | ((resume0 as u64) & 0x3FFF) << 34 | (kind as u64) << 32 | region as u64)
    }
    #[inline]
    pub fn generation(self) -> u64 {
        self.0 >> 48
    }
    #[inline]
    pub fn region(self) -> u32 {
        self.0 as u32
    }
    #[inline]
    pub fn kind(self) -> Kind {
        match (self.0 >> 32) & 3 {
            1 => Kind::Generator,
            2 => Kind::Coroutine,
            3 => Kind::AsyncGenerator,
            _ => Kind::Plain,
        }
    }
    #[inline]
    pub fn resume0(self) -> u32 {
        ((self.0 >> 34) & 0x3FFF) as u32
    }
}

/// Code unit of the first `RESUME 0` in `co_code` (3.11's `f_lasti` / 2 at a generator's
/// first start; a resume after a yield has another argument), at most 0x3FFF; 0 when absent.
pub fn first_resume(co_code: &[u8], resume_opcode: u8) -> u32 {
    co_code.chunks_exact(2).position(|w| w[0] == resume_opcode && w[1] == 0).map_or(0, |i| (i as u32).min(0x3FFF))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_keeps_each_field() {
        let d = Decision::new(0x1_2345, 7, Kind::Coroutine, 41);
        assert_eq!((d.generation(), d.region(), d.kind(), d.resume0()), (0x2345, 7, Kind::Coroutine, 41));
        let skip = Decision::new(65535, SKIP, Kind::Plain, 0);
        assert_eq!((skip.generation(), skip.region(), skip.kind()), (65535, SKIP, Kind::Plain));
        // resume0 is clipped to its 14 bits, never spilling into the generation
        let far = Decision::new(3, 1, Kind::AsyncGenerator, 0x7FFF);
        assert_eq!((far.generation(), far.resume0(), far.kind()), (3, 0x3FFF, Kind::AsyncGenerator));
    }

    #[test]
    fn kinds_from_co_flags() {
        // inspect.CO_*: a plain function 0x3, a generator 0x23, a coroutine 0x83, an async
        // generator 0x203, a types.coroutine generator 0x123
        assert_eq!(Kind::from_flags(0x3), Kind::Plain);
        assert_eq!(Kind::from_flags(0x23), Kind::Generator);
        assert_eq!(Kind::from_flags(0x83), Kind::Coroutine);
        assert_eq!(Kind::from_flags(0x123), Kind::Coroutine);
        assert_eq!(Kind::from_flags(0x203), Kind::AsyncGenerator);
    }

    #[test]
    fn first_resume_finds_resume_with_argument_0() {
        const RESUME: u8 = 151;
        // RETURN_GENERATOR, POP_TOP, RESUME 0, ..., RESUME 1 (after a yield)
        let code = [75, 0, 1, 0, RESUME, 0, 100, 1, RESUME, 1];
        assert_eq!(first_resume(&code, RESUME), 2);
        assert_eq!(first_resume(&[RESUME, 1, 100, 0], RESUME), 0);
        assert_eq!(first_resume(&[], RESUME), 0);
    }
}
