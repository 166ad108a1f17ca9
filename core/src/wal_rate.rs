//! The WAL rate of the worker's deletes, over a sliding window (`jsonb_ttl.max_wal_rate`): the
//! worker samples a count of WAL bytes before each batch and while it waits, and the rate is the
//! bytes written since the oldest sample still in the window, over the time since then.
//!
//! The window keeps the newest sample that is at least [`WINDOW`] old as its base, so the rate
//! is taken over [`WINDOW`] or more once the worker has run that long; a span shorter than
//! [`MIN_SPAN`] counts as [`MIN_SPAN`], so the first batch after a pause is not a burst of
//! thousands of bytes a second. Over any span, the worker thus writes at most `limit × span`
//! bytes, plus one batch (it checks before a batch, not during one), plus `limit × MIN_SPAN`.

use std::collections::VecDeque;
use std::time::Duration;

/// The span the rate is measured over, once the worker has run that long.
pub const WINDOW: Duration = Duration::from_secs(5);

/// The shortest span a rate is taken over.
pub const MIN_SPAN: Duration = Duration::from_secs(1);

/// Samples closer together than this replace each other (the newest is kept), so a worker that
/// checks before every batch of a fast purge keeps a few hundred samples at most.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// Samples of (time since an arbitrary origin, WAL bytes written so far), oldest first.
#[derive(Debug, Default, Clone)]
pub struct Window {
    samples: VecDeque<(Duration, u64)>,
}

impl Window {
    /// Records that `bytes` of WAL had been written at `now` and returns the rate, in bytes a
    /// second, over the window. `now` and `bytes` never go back; a count that does (a counter
    /// reset) starts the window again.
    pub fn rate(&mut self, now: Duration, bytes: u64) -> f64 {
        if self
            .samples
            .back()
            .is_some_and(|&(at, counted)| at > now || counted > bytes)
        {
            self.samples.clear();
        }
        match self.samples.back() {
            // the newest sample moves forward instead of piling up
            Some(&(at, _)) if self.samples.len() > 1 && now - at < SAMPLE_EVERY => {
                *self.samples.back_mut().expect("not empty") = (now, bytes);
            }
            _ => self.samples.push_back((now, bytes)),
        }
        while self.samples.len() > 1 && self.samples[1].0 + WINDOW <= now {
            self.samples.pop_front();
        }
        let (since, base) = self.samples[0];
        let span = (now - since).max(MIN_SPAN);
        (bytes - base) as f64 / span.as_secs_f64()
    }

    /// Forgets every sample (the limit was turned off: it starts afresh when turned on).
    pub fn clear(&mut self) {
        self.samples.clear();
    }

    /// How many samples the window holds.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether the window holds no sample.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_first_sample_is_no_rate() {
        let mut w = Window::default();
        assert_eq!(w.rate(ms(10_000), 123_456), 0.0);
        assert_eq!(w.len(), 1);
        assert!(!w.is_empty());
    }

    #[test]
    fn a_short_span_counts_as_min_span() {
        let mut w = Window::default();
        w.rate(ms(0), 0);
        // 1000 bytes in 100 ms: 1000 bytes/s, not 10,000
        assert_eq!(w.rate(ms(100), 1000), 1000.0);
    }

    #[test]
    fn a_long_span_is_divided_by_its_length() {
        let mut w = Window::default();
        w.rate(ms(0), 0);
        assert_eq!(w.rate(ms(2000), 1000), 500.0);
        assert_eq!(w.rate(ms(4000), 1000), 250.0);
    }

    #[test]
    fn the_window_slides() {
        let mut w = Window::default();
        w.rate(ms(0), 0);
        w.rate(ms(1000), 10_000); // a burst in the first second
                                  // 6 s later the sample at 0 left the window; the base is the one at 1000
        assert_eq!(w.rate(ms(6000), 10_000), 0.0);
        assert_eq!(w.len(), 2);
        // the base is the newest sample at least WINDOW old, not the first younger one
        let mut w = Window::default();
        w.rate(ms(0), 0);
        w.rate(ms(3000), 3000);
        w.rate(ms(4000), 4000);
        // at 8000: the sample at 3000 is exactly WINDOW old, it is the base
        assert_eq!(w.rate(ms(8000), 9000), 6000.0 / 5.0);
        assert_eq!(w.len(), 3);
        // at 7999: the sample at 3000 is younger than WINDOW, the one at 0 stays the base
        let mut w = Window::default();
        w.rate(ms(0), 0);
        w.rate(ms(3000), 3000);
        assert_eq!(w.rate(ms(7999), 7999), 7999.0 / 7.999);
        assert_eq!(w.len(), 3);
    }

    #[test]
    fn close_samples_replace_the_newest() {
        let mut w = Window::default();
        w.rate(ms(0), 0);
        w.rate(ms(100), 100);
        w.rate(ms(120), 200);
        w.rate(ms(149), 300);
        assert_eq!(w.len(), 2);
        w.rate(ms(199), 400);
        assert_eq!(w.len(), 3);
        // the second sample is never merged into the first (the base)
        let mut w = Window::default();
        w.rate(ms(0), 0);
        w.rate(ms(10), 10);
        assert_eq!(w.len(), 2);
        w.rate(ms(20), 20);
        assert_eq!(w.len(), 2);
        assert_eq!(w.rate(ms(5000), 5000), 1000.0);
    }

    #[test]
    fn a_counter_that_goes_back_starts_again() {
        let mut w = Window::default();
        w.rate(ms(0), 1000);
        w.rate(ms(2000), 5000);
        assert_eq!(w.rate(ms(3000), 10), 0.0);
        assert_eq!(w.len(), 1);
        let mut w = Window::default();
        w.rate(ms(5000), 1000);
        assert_eq!(w.rate(ms(4000), 2000), 0.0);
        assert_eq!(w.len(), 1);
        // the same time is no reset either
        let mut w = Window::default();
        w.rate(ms(0), 0);
        w.rate(ms(1000), 1000);
        assert_eq!(w.rate(ms(1000), 2000), 2000.0);
        assert_eq!(w.len(), 2);
        // the same count is no reset
        let mut w = Window::default();
        w.rate(ms(0), 1000);
        assert_eq!(w.rate(ms(2000), 1000), 0.0);
        assert_eq!(w.len(), 2);
    }

    #[test]
    fn clear_forgets() {
        let mut w = Window::default();
        w.rate(ms(0), 0);
        w.rate(ms(500), 50_000);
        w.clear();
        assert!(w.is_empty());
        assert_eq!(w.rate(ms(600), 60_000), 0.0);
    }

    #[test]
    fn a_steady_writer_at_the_limit_reads_the_limit() {
        let mut w = Window::default();
        let mut last = 0.0;
        for i in 0..200u64 {
            last = w.rate(ms(i * 100), i * 100);
        }
        assert!((last - 1000.0).abs() < 1e-9, "{last}");
        assert!(w.len() <= 52, "{}", w.len());
    }
}
