import LedgerCore
import NIOHTTP1

extension AndroidPublisherClient {
    /// `purchases.products.get` (v1).
    package func product(
        package packageName: String, productID: String, token: String
    ) async throws(LedgerError) -> GoogleEvidence<
        ProductPurchase
    > {
        let body = try await send(
            .GET, package: packageName, ["purchases", "products", productID, "tokens", token], token: token,
            endpoint: "GET purchases/products/{productId}/tokens/{token}")
        return try .decode(body, as: "Google's product purchase")
    }

    /// `purchases.productsv2.getproductpurchasev2`: the one-time purchase by its token alone.
    package func productV2(package packageName: String, token: String) async throws(LedgerError) -> GoogleEvidence<ProductPurchaseV2> {
        let body = try await send(
            .GET, package: packageName, ["purchases", "productsv2", "tokens", token], token: token,
            endpoint: "GET purchases/productsv2/tokens/{token}")
        return try .decode(body, as: "Google's product purchase (v2)")
    }

    /// `purchases.products.acknowledge`: a pending or already acknowledged purchase is refused
    /// (`invalidPurchaseState`).
    package func acknowledgeProduct(
        package packageName: String, productID: String, token: String, developerPayload: String? = nil
    ) async throws(LedgerError) {
        _ = try await send(
            .POST, package: packageName, ["purchases", "products", productID, "tokens", token], action: "acknowledge",
            body: developerPayload.map { ["developerPayload": $0] } ?? [:], token: token,
            endpoint: "POST purchases/products/{productId}/tokens/{token}:acknowledge")
    }

    /// `purchases.products.consume`: the item can be bought again; consuming acknowledges too.
    package func consumeProduct(package packageName: String, productID: String, token: String) async throws(LedgerError) {
        _ = try await send(
            .POST, package: packageName, ["purchases", "products", productID, "tokens", token], action: "consume", token: token,
            endpoint: "POST purchases/products/{productId}/tokens/{token}:consume")
    }
}
