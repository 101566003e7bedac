import Foundation

/// Apple's `UploadMessageRequestBody`, checked against Apple's limits before it is sent.
package struct RetentionMessage: Codable, Sendable, Equatable {
    package struct Image: Codable, Sendable, Equatable {
        package var imageIdentifier: String
        package var altText: String
        package init(imageIdentifier: String, altText: String) {
            self.imageIdentifier = imageIdentifier
            self.altText = altText
        }
    }
    package struct BulletPoint: Codable, Sendable, Equatable {
        package var text: String
        package var imageIdentifier: String
        package var altText: String
        package init(text: String, imageIdentifier: String, altText: String) {
            self.text = text
            self.imageIdentifier = imageIdentifier
            self.altText = altText
        }
    }
    package var header: String
    package var body: String
    package var image: Image?
    /// ABOVE_BODY (Apple's default) or ABOVE_IMAGE, which needs an image.
    package var headerPosition: String?
    package var bulletPoints: [BulletPoint]?

    package init(header: String, body: String, image: Image? = nil, headerPosition: String? = nil, bulletPoints: [BulletPoint]? = nil) {
        self.header = header
        self.body = body
        self.image = image
        self.headerPosition = headerPosition
        self.bulletPoints = bulletPoints
    }

    /// What Apple would refuse, said field by field, or nil.
    package var problem: String? {
        func length(_ text: String) -> Int { text.unicodeScalars.count }
        guard (1...66).contains(length(header)) else { return "header is 1–66 characters" }
        guard (1...144).contains(length(body)) else { return "body is 1–144 characters" }
        if let image, UUID(uuidString: image.imageIdentifier) == nil || length(image.altText) > 150 || image.altText.isEmpty {
            return "image names an uploaded image by its UUID, with alt_text of 1–150 characters"
        }
        if let position = headerPosition {
            guard ["ABOVE_BODY", "ABOVE_IMAGE"].contains(position) else { return "header_position is ABOVE_BODY or ABOVE_IMAGE" }
            if position == "ABOVE_IMAGE", image == nil { return "header_position ABOVE_IMAGE needs an image" }
        }
        if let bullets = bulletPoints {
            guard bullets.count <= 5 else { return "at most 5 bullet_points" }
            for (index, bullet) in bullets.enumerated() {
                guard (1...66).contains(length(bullet.text)), UUID(uuidString: bullet.imageIdentifier) != nil,
                    (1...150).contains(length(bullet.altText))
                else {
                    return "bullet_points[\(index)] has text of 1–66 characters, an image_id (UUID) and alt_text of 1–150 characters"
                }
            }
        }
        return nil
    }

    /// Why Apple would refuse this PNG (not a PNG; transparency, which Apple does not take), or nil.
    package static func imageProblem(_ png: Data) -> String? {
        let bytes = [UInt8](png)
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        guard bytes.count > 33, Array(bytes[0..<8]) == signature, Array(bytes[12..<16]) == Array("IHDR".utf8) else {
            return "the image is not a PNG"
        }
        // Colour types 4 and 6 carry an alpha channel; a tRNS chunk makes a colour transparent.
        if bytes[25] == 4 || bytes[25] == 6 { return "the PNG has an alpha channel; Apple takes images without transparency" }
        var offset = 8
        while offset + 8 <= bytes.count {
            let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            if type == "tRNS" { return "the PNG has a transparent colour (tRNS); Apple takes images without transparency" }
            if type == "IEND" { return nil }
            offset += 12 + length
        }
        return "the PNG ends early"
    }
}

package struct RetentionMessageState: Codable, Sendable, Equatable {
    package var messageIdentifier: String
    /// PENDING, APPROVED or REJECTED.
    package var messageState: String?
}

package struct RetentionImageState: Codable, Sendable, Equatable {
    package var imageIdentifier: String
    package var imageState: String?
    package var imageSize: String?
}

package struct MessageList: Decodable { package var messageIdentifiers: [RetentionMessageState]? }
package struct ImageList: Decodable { package var imageIdentifiers: [RetentionImageState]? }

/// Apple's `PerformanceTestConfig`.
package struct PerformanceTestConfig: Codable, Sendable, Equatable {
    package var maxConcurrentRequests: Int?
    package var totalRequests: Int?
    /// Milliseconds.
    package var totalDuration: Int?
    /// Milliseconds: a slower answer is a failure.
    package var responseTimeThreshold: Int?
    /// Percent.
    package var successRateThreshold: Int?
}

package struct PerformanceTestStarted: Codable, Sendable {
    package var config: PerformanceTestConfig?
    package var requestId: String
}

/// Apple's `PerformanceTestResultResponse`; `failures` by `SendAttemptResult`.
package struct PerformanceTestResult: Codable, Sendable {
    package struct ResponseTimes: Codable, Sendable, Equatable {
        package var average: Int?
        package var p50: Int?
        package var p90: Int?
        package var p95: Int?
        package var p99: Int?
    }
    package var config: PerformanceTestConfig?
    package var target: String?
    /// PENDING, PASS or FAIL.
    package var result: String
    package var successRate: Int?
    package var numPending: Int?
    package var responseTimes: ResponseTimes?
    package var failures: [String: Int]?
}
