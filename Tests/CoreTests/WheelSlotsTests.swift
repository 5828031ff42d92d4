// The timing wheel's slots (cf_wheel_slots.c) on a clock the test moves:
// every deadline comes due at the first move that reaches its tick, never
// before; the wheel never sleeps past a pending deadline; cancelled
// entries leave through `gone`; nothing is lost or counted twice.
import CCollapsingFutures
import Foundation
import Testing

/// A wheel with `n` entries the test owns, on a clock that starts at `start`.
final class SlotsHarness {
    let w: UnsafeMutablePointer<cf_slots>
    let entries: UnsafeMutablePointer<cf_deadline>
    let n: Int
    var armed: [Bool], came: [Int]
    var now: UInt64

    init(entries n: Int, start: UInt64) {
        self.n = n
        w = calloc(1, MemoryLayout<cf_slots>.size)!.assumingMemoryBound(to: cf_slots.self)
        entries = .allocate(capacity: n)
        entries.initialize(repeating: cf_deadline(), count: n)
        armed = Array(repeating: false, count: n)
        came = Array(repeating: 0, count: n)
        now = 0
        var due = cf_deadlines(), gone: UnsafeMutablePointer<cf_deadline>?
        cf_slots_advance(w, start, &due, &gone)
        now = start
    }

    deinit {
        free(w)
        entries.deallocate()
    }

    func index(_ d: UnsafeMutablePointer<cf_deadline>) -> Int { entries.distance(to: d) }

    /// Arms entry `i` for `tick`; an entry due at once comes out here.
    func arm(_ i: Int, at tick: UInt64) {
        entries[i] = cf_deadline(state: UInt(CF_D_ARMED), next: nil, due_ns: tick * CF_WHEEL_TICK_NS)
        armed[i] = true
        var due = cf_deadlines()
        cf_slots_place(w, entries + i, &due)
        if let d = due.head {
            #expect(d == entries + i && d.pointee.next == nil && due.tail == d)
            #expect(tick <= now)
            came[i] += 1
            armed[i] = false
        }
    }

    func cancel(_ i: Int) {
        entries[i].state = UInt(CF_D_CANCELLED)
        armed[i] = false
    }

    func tick(_ i: Int) -> UInt64 { cf_deadline_tick(entries + i) }

    /// The earliest tick of an armed entry still waiting.
    var earliestPending: UInt64? {
        var earliest: UInt64?
        for i in 0..<n where armed[i] && tick(i) < earliest ?? .max { earliest = tick(i) }
        return earliest
    }

    /// Moves the clock to `to`; checks what comes out.
    func advance(to: UInt64) {
        let before = now
        var due = cf_deadlines(), gone: UnsafeMutablePointer<cf_deadline>?
        cf_slots_advance(w, to, &due, &gone)
        now = to
        // In firing order. A cancelled entry may come with a slot of one
        // tick (the driver's CAS finds it); it is dropped, as the driver does.
        var fired: [Int] = []
        var next = due.head
        while let e = next {
            next = e.pointee.next
            if next == nil { #expect(due.tail == e) }
            let i = index(e)
            if e.pointee.state == UInt(CF_D_CANCELLED) {
                #expect(tick(i) <= to, "a cancelled entry came with a slot not yet due")
                e.pointee.state = UInt(CF_D_FIRED)   // dropped: never seen again
                continue
            }
            fired.append(i)
        }
        for (k, i) in fired.enumerated() {
            #expect(tick(i) <= to, "came due early")
            #expect(tick(i) > before, "came due late: at \(to), due at \(tick(i)), reached at \(before)")
            #expect(armed[i], "came due although cancelled or already due")
            if k > 0 {
                let p = fired[k - 1]
                #expect(tick(p) < tick(i) || (tick(p) == tick(i) && p < i),
                        "out of order: \(p) (tick \(tick(p))) before \(i) (tick \(tick(i)))")
            }
            came[i] += 1
            armed[i] = false
        }
        while let d = gone {
            gone = d.pointee.next
            #expect(d.pointee.state == UInt(CF_D_CANCELLED))
            entries[index(d)].state = UInt(CF_D_FIRED)   // dropped: never seen again
        }
    }

    /// The tick the driver would sleep until: never after a pending deadline.
    func checkNextDue() {
        var next: UInt64 = 0
        let found = cf_slots_next_due(w, &next) != 0
        if let earliest = earliestPending {
            #expect(found && next <= earliest, "would sleep until \(next) past a deadline at \(earliest)")
        }
        if found { #expect(next > now) }
    }
}

/// A small deterministic generator (the test must replay exactly).
struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: UInt64) -> UInt64 { next() % n }
}

@Suite struct WheelSlots {
    @Test(arguments: [0, 1 << 30 - 10_000, 1 << 36 - 5_000, 3 << 36 + 17] as [UInt64])
    func everyDeadlineComesDueAtTheFirstMoveThatReachesIt(start: UInt64) {
        let n = 3_000
        let h = SlotsHarness(entries: n, start: start)
        var rng = SplitMix(state: start &+ 1)
        var next = 0
        for _ in 0..<400 {
            for _ in 0..<8 where next < n {
                let delay: UInt64
                switch rng.below(8) {
                case 0: delay = 0
                case 1, 2: delay = 1 + rng.below(64)
                case 3, 4: delay = 1 + rng.below(1 << 18)
                case 5: delay = 1 + rng.below(1 << 30)
                case 6: delay = 1 + rng.below(1 << 36)
                default: delay = (1 << 36) + rng.below(1 << 40)   // beyond the wheel's reach
                }
                h.arm(next, at: h.now + delay)
                next += 1
            }
            if next > 0, rng.below(3) == 0 {
                let i = Int(rng.below(UInt64(next)))
                if h.armed[i] { h.cancel(i) }
            }
            h.checkNextDue()
            var due: UInt64 = 0
            switch rng.below(4) {
            case 0: h.advance(to: h.now + 1 + rng.below(64))
            case 1: h.advance(to: h.now + rng.below(1 << 20))
            default:
                // As the driver does: sleep until the next slot comes due.
                if cf_slots_next_due(h.w, &due) != 0 { h.advance(to: due) }
            }
        }
        // Let every deadline come due, slot by slot, as the driver would.
        var due: UInt64 = 0
        while cf_slots_next_due(h.w, &due) != 0 {
            h.checkNextDue()
            h.advance(to: due)
        }
        #expect(h.w.pointee.held == 0)
        #expect(h.earliestPending == nil, "an armed deadline never came due")
        #expect(h.came.allSatisfy { $0 <= 1 })
    }

    @Test func aDeadlineBeyondTheWheelsReachHidesNoNearerOne() {
        // A deadline three years away waits in the top level's current slot;
        // one of 30 s armed 12 days on, across a top-level boundary, must
        // still be the next to come due.
        let h = SlotsHarness(entries: 2, start: 1_000)
        h.arm(0, at: 1_000 + 3 * 365 * 86_400_000)
        h.advance(to: 1 << 30 - 10_000)
        h.arm(1, at: h.now + 30_000)
        h.checkNextDue()
        var due: UInt64 = 0
        #expect(cf_slots_next_due(h.w, &due) != 0 && due <= h.now + 30_000)
        while cf_slots_next_due(h.w, &due) != 0, h.armed[1] { h.advance(to: due) }
        #expect(h.came[1] == 1 && h.came[0] == 0)
    }

    @Test func deadlinesOfOneTickComeDueInTheOrderTheyWereArmed() {
        // Armed at every distance, so some wait in upper levels and move
        // down while later ones of the same tick go straight to level 0.
        let n = 4_000
        let h = SlotsHarness(entries: n, start: 100)
        var rng = SplitMix(state: 7)
        var next = 0
        while next < n {
            for _ in 0..<40 where next < n {
                h.arm(next, at: 5_000 + rng.below(8))   // eight ticks, many entries each
                next += 1
            }
            h.advance(to: h.now + 1 + rng.below(90))   // `advance` checks the order
        }
        var due: UInt64 = 0
        while cf_slots_next_due(h.w, &due) != 0 { h.advance(to: due) }
        #expect(h.came.allSatisfy { $0 == 1 })
    }

    @Test func aSweepTakesOutCancelledEntriesOnly() {
        let h = SlotsHarness(entries: 1_100, start: 5)
        for i in 0..<1_000 { h.arm(i, at: 10 + UInt64(i) * 997) }
        for i in stride(from: 0, to: 1_000, by: 3) { h.cancel(i) }
        var gone: UnsafeMutablePointer<cf_deadline>?
        cf_slots_sweep(h.w, &gone)
        var swept = 0
        while let d = gone {
            gone = d.pointee.next
            #expect(h.index(d) % 3 == 0)
            swept += 1
        }
        #expect(swept == 334)
        #expect(h.w.pointee.held == 666)
        // Slots the sweep emptied or cut the end of take new entries.
        for k in 0..<100 { h.arm(1_000 + k, at: 10 + UInt64(3 * k) * 997) }
        var due: UInt64 = 0
        while cf_slots_next_due(h.w, &due) != 0 { h.advance(to: due) }
        #expect((0..<1_100).allSatisfy { h.came[$0] == ($0 < 1_000 && $0 % 3 == 0 ? 0 : 1) })
        #expect(h.w.pointee.held == 0)
    }
}
