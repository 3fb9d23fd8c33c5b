// The product is enough: `import CourierAsyncHTTPClient` gives Courier's API too (a target that depends on this
// product alone may also write `import Courier`).
@_exported import Courier
