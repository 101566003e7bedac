import Foundation
import HTTPTypes
import Hummingbird
import LedgerAccess
import Mustache

/// Pages drawn from the templates, with the headers that keep a page from being framed, sniffed,
/// cached or sent on as a referrer.
extension ConsoleController {
    /// What every page shows around its content.
    struct Frame {
        var title: String
        var error: String?
        var app: String?
        var signedIn = false
        var keyName = ""
        var admin = false
        var csrf = ""
    }

    func frame(_ title: String, app: String?, _ session: ConsoleSessions.Session) -> Frame {
        Frame(title: title, app: app, signedIn: true, keyName: session.keyName, admin: session.may(.admin), csrf: session.csrf)
    }

    func render(_ template: String, _ content: Any, session: ConsoleSessions.Session?, status: HTTPResponse.Status = .ok) -> Response {
        var object = content
        if var frame = content as? Frame, let session {
            frame.signedIn = true
            frame.keyName = session.keyName
            frame.admin = session.may(.admin)
            frame.csrf = session.csrf
            object = frame
        }
        // Every template is loaded (and checked) when the controller is made; one a page names that
        // was not loaded is a fault of this code, shown as one rather than as an empty page.
        guard let html = templates.render(object, withTemplate: template) else {
            return Response(
                status: .internalServerError, body: .init(byteBuffer: ByteBuffer(string: "the console has no template \(template)")))
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        headers[HTTPField.Name("Content-Security-Policy")!] =
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// A path segment, percent-encoded.
    static func path(_ text: String) -> String {
        text.addingPercentEncoding(
            withAllowedCharacters: CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~"))
            ?? ""
    }
}
