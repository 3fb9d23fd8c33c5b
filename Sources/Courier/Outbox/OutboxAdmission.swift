import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// What the outbox lets in, and in what form: a request that carries a secret is refused, its body is encoded and
// bounded, and it becomes the ``StoredEntry`` written to the journal.
extension Outbox {
    /// Refuses a request that carries a secret (see the type's "No secret on disk").
    private func refuseSecrets<RequestModel, ResponseModel>(
        in request: NetworkRequest<RequestModel, ResponseModel>, body: Data?
    ) throws(OutboxError) {
        for name in (request.additionalHeaders ?? [:]).keys
        where secrets.isSecretHeader(name, sensitiveHeaders: sensitiveHeaders) {
            throw .secretHeader(name: name)
        }
        if let baseURL = request.baseURL {
            if baseURL.user != nil || baseURL.password != nil {
                throw .secretValue(name: "user info", location: "the base URL")
            }
            let items = URLComponents(url: baseURL, resolvingAgainstBaseURL: false)?.queryItems ?? []
            for item in items where secrets.isSecretQueryParameter(item.name) {
                throw .secretValue(name: item.name, location: "the base URL's query")
            }
        }
        for item in request.queryItems ?? [] where secrets.isSecretQueryParameter(item.name) {
            throw .secretValue(name: item.name, location: "the query")
        }
        for item in request.formItems ?? [] where secrets.isSecretField(item.name) {
            throw .secretValue(name: item.name, location: "the form body")
        }
        if let body, let name = Self.secretField(inJSON: body, secrets) {
            throw .secretValue(name: name, location: "the JSON body")
        }
    }

    /// The first field name at any depth of a JSON body that names a secret, by the logger's walk; `nil` for none
    /// or a body that is not a JSON object or array.
    private static func secretField(inJSON body: Data, _ secrets: LogRedaction) -> String? {
        guard let first = body.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }),
            first == UInt8(ascii: "{") || first == UInt8(ascii: "["),
            let json = try? JSONSerialization.jsonObject(with: body)
        else { return nil }
        var fields: [String] = []
        _ = secrets.redactingJSON(json, with: "", fields: &fields)
        return fields.first
    }

    /// `request` as the entry the journal stores, once it is let in: no stream response, no secret, valid headers,
    /// its body encoded (with the request's encoder or the rules') and within ``Limits/maximumBodySize``, its
    /// `Idempotency-Key` kept (else a new one).
    func stored<RequestModel, ResponseModel>(
        _ request: NetworkRequest<RequestModel, ResponseModel>, kind: String, orderingKey: String?
    ) throws(OutboxError) -> StoredEntry {
        if ResponseKinds.isStream(ResponseModel.self) {
            throw .invalidRequest(
                reason: "a \(ResponseModel.self) response is read as it arrives by the caller of run(_:), and an "
                    + "outbox entry has no caller waiting: enqueue the write with VoidResponse, Data or a Decodable "
                    + "result")
        }
        var headers = request.additionalHeaders ?? [:]
        try refuseSecrets(in: request, body: nil)
        do {
            try HeaderValidation.validate(headers)
        } catch {
            throw .invalidRequest(reason: error.description)
        }
        var idempotencyKey = UUID().uuidString
        if let name = headers.keys.first(where: {
            $0.caseInsensitiveCompare(Self.idempotencyHeader) == .orderedSame
        }) {
            idempotencyKey = headers.removeValue(forKey: name)!
        }
        var body: Data?
        var contentType: String?
        if request.formItems != nil {
            guard request.body == nil else {
                throw .invalidRequest(reason: "both formItems and body are set; a request has one body")
            }
        } else if let kind = BodyKinds.kind(of: request) {
            (body, contentType) = try kind.storedForOutbox(
                with: request.encoder ?? rules.encoder)
        }
        try refuseSecrets(in: request, body: body)
        if let size = body?.count ?? request.formItems.map({ FormEncoding.body($0).count }),
            size > limits.maximumBodySize
        {
            throw .bodyTooLarge(size: size, limit: limits.maximumBodySize)
        }
        if let contentType,
            !headers.keys.contains(where: { $0.caseInsensitiveCompare("Content-Type") == .orderedSame })
        {
            headers["Content-Type"] = contentType
        }
        return StoredEntry(
            id: UUID(), sequence: 0, kind: kind, orderingKey: orderingKey, idempotencyKey: idempotencyKey,
            enqueuedAt: environment.now(), method: request.method.rawValue, path: request.path,
            queryItems: request.queryItems?.map { StoredEntry.StoredItem(name: $0.name, value: $0.value) },
            formItems: request.formItems?.map { StoredEntry.StoredItem(name: $0.name, value: $0.value) },
            headers: headers, body: body, baseURL: request.baseURL, timeoutInterval: request.timeoutInterval,
            totalTimeout: request.totalTimeout, maximumResponseSize: request.maximumResponseSize,
            acceptableStatusCodes: request.acceptableStatusCodes.map { $0.sorted() })
    }
}
