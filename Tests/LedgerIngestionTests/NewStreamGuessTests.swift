import Testing

@testable import LedgerIngestion

/// When a group may take its streams to be new: never before a group has written the version to
/// assume; paused longer after each refusal in a row, up to a bound; a won guess halves the pause.
@Suite struct NewStreamGuessTests {
    /// How many of the next `groups` groups would assume.
    private func assuming(_ guess: inout NewStreamGuess, in groups: Int) -> Int {
        (0..<groups).reduce(0) { count, _ in count + (guess.next() == nil ? 0 : 1) }
    }

    @Test func nothingIsAssumedBeforeAGroupWroteTheVersion() {
        var guess = NewStreamGuess()
        #expect(assuming(&guess, in: 10) == 0)
        guess.written(version: 3, assumed: false)
        #expect(guess.next() == 3)
    }

    @Test func refusalsInARowPauseLongerUpToTheBound() {
        var guess = NewStreamGuess()
        guess.written(version: 1, assumed: false)
        var pauses: [Int] = []
        for _ in 0..<9 {
            guess.refused()
            var skipped = 0
            while guess.next() == nil { skipped += 1 }
            pauses.append(skipped)
        }
        #expect(pauses == [4, 8, 16, 32, 64, 128, 256, 256, 256])
    }

    @Test func wonGuessesShortenThePauseAndKeepTheVersion() {
        var guess = NewStreamGuess()
        guess.written(version: 1, assumed: false)
        for _ in 0..<4 { guess.refused() } // pause 32
        #expect(assuming(&guess, in: 32) == 0)
        guess.written(version: 2, assumed: true) // 16
        guess.written(version: 2, assumed: true) // 8
        guess.refused() // 16
        #expect(assuming(&guess, in: 16) == 0)
        #expect(guess.next() == 2, "the version the last group wrote")
    }
}
