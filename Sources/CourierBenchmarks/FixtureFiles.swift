import Foundation

/// Writes the files that let nginx stand in for the in-process server (`--write-fixtures DIR`).
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
enum FixtureFiles {
    /// Writes `small.json`, `large.json`, `post` (a copy of `small.json`) and `nginx.conf` into `directory`.
    /// - Returns: The paths written, in order.
    static func write(to directory: String) throws -> [String] {
        let root = URL(fileURLWithPath: directory, isDirectory: true).standardizedFileURL
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let files: [(name: String, data: Data)] = [
            ("small.json", Fixtures.small),
            ("large.json", Fixtures.large),
            ("post", Fixtures.small),
            ("nginx.conf", Data(nginxConfiguration(root: root.path).utf8)),
        ]
        return try files.map { file in
            let url = root.appendingPathComponent(file.name)
            try file.data.write(to: url)
            return url.path
        }
    }

    /// A sample nginx configuration serving the fixtures from `root` on 127.0.0.1:8080.
    static func nginxConfiguration(root: String) -> String {
        """
        # nginx configuration for: CourierBenchmarks --base-url http://127.0.0.1:8080
        # Start it from this directory:   nginx -p "$PWD" -c "$PWD/nginx.conf"
        # Stop it:                        nginx -p "$PWD" -c "$PWD/nginx.conf" -s stop
        # With nginx serving the requests, getrusage in the benchmark counts the client's CPU only.
        # For /slow (the fan-out scenario), load the echo module here and uncomment `location = /slow` below;
        # on Debian: apt-get install libnginx-mod-http-echo, and:
        # load_module /usr/lib/nginx/modules/ngx_http_echo_module.so;
        worker_processes 1;
        pid nginx.pid;
        error_log stderr warn;

        events {
            worker_connections 1024;
        }

        http {
            access_log off;
            # The benchmark keeps its connections open for thousands of requests.
            keepalive_requests 1000000;
            keepalive_timeout 65s;
            client_body_temp_path client_body_temp;
            proxy_temp_path proxy_temp;
            fastcgi_temp_path fastcgi_temp;
            uwsgi_temp_path uwsgi_temp;
            scgi_temp_path scgi_temp;
            types {
                application/json json;
            }
            default_type application/json;

            server {
                listen 127.0.0.1:8080;
                root \(root);

                location = /small.json {}
                location = /large.json {}

                # nginx's static module answers POST with 405 Not Allowed. error_page turns that into a 200 and an
                # internal GET of the same URI, which serves the file `post` (a copy of small.json). nginx reads
                # and discards the request body first, so the connection stays reusable.
                location = /post {
                    error_page 405 =200 $uri;
                }

                # /slow must answer small.json after 50 ms. Stock nginx cannot wait; with the echo module
                # (OpenResty, or load_module above) uncomment this:
                # location = /slow {
                #     echo_sleep 0.05;
                #     echo_exec /small.json;
                # }
                # Without /slow the benchmark skips the dedup fan-out scenario.
            }
        }

        """
    }
}
