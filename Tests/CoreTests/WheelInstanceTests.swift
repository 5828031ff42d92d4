// A timing wheel of the test's own (cf_wheel_create), with a callback of
// its own and raw entries: nothing of the library's wheel is involved, so
// what it holds and what it hands back are this test's alone.
import CCollapsingFutures
import Foundation
import Testing
import TestSupport

/// What the test wheel's callback saw, in order: (entry index, event).
/// A C callback captures nothing: the one test wheel reports here.
private let wheelEvents = Locked<[(Int, Int32)]>([])
nonisolated(unsafe) private var wheelEntries: UnsafeMutablePointer<cf_deadline>?

@Suite struct WheelInstance {
    @Test func aWheelOfItsOwnFiresInOrderAndDropsWhatWasCancelled() {
        let near = 100, far = 2 * Int(CF_WHEEL_SWEEP_MIN)
        let entries = UnsafeMutablePointer<cf_deadline>.allocate(capacity: near + far)
        entries.initialize(repeating: cf_deadline(), count: near + far)
        wheelEntries = entries
        guard let wheel = cf_wheel_create({ d, event in
            wheelEvents.withLock { $0.append((wheelEntries!.distance(to: d), event)) }
        }, CF_CLOCK_SUSPENDING) else {
            Issue.record("the wheel's driver did not start")
            return
        }
        // Near entries fire, in the order armed. Far ones wait in the
        // inbox until the driver wakes (for the near ones), then in slots;
        // cancelled there, the cancel that reaches the mark asks for a
        // sweep, which drops those cancelled by then (the wheel keeps
        // fewer than CF_WHEEL_SWEEP_MIN cancelled entries).
        for i in near..<(near + far) { cf_deadline_arm(wheel, entries + i, 3_600_000_000_000) }
        for i in 0..<near { cf_deadline_arm(wheel, entries + i, 2_000_000) }
        #expect(eventually { wheelEvents.withLock { $0.count } == near && cf_wheel_debug_held(wheel) == far })
        for i in near..<(near + far) { #expect(cf_deadline_cancel(wheel, entries + i) == 1) }
        #expect(eventually { cf_wheel_debug_held(wheel) < Int(CF_WHEEL_SWEEP_MIN) })
        let events = wheelEvents.withLock { $0 }
        let fired = events.filter { $0.1 == CF_DL_FIRE.rawValue }.map(\.0)
        let dropped = events.filter { $0.1 == CF_DL_DROP.rawValue }.map(\.0)
        #expect(fired == Array(0..<near))
        #expect(Set(dropped).count == dropped.count && dropped.allSatisfy { $0 >= near })
        #expect(dropped.count + cf_wheel_debug_held(wheel) == far)
        #expect((0..<near).allSatisfy { cf_deadline_state(entries + $0) == UInt(CF_D_FIRED) })
        // The library's wheel is another one: none of these reached it.
        #expect(cf_wheel_shared(CF_CLOCK_SUSPENDING) != wheel)
    }
}
