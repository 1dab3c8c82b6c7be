"""A WSGI application: what gunicorn (or uvicorn, for ASGI) serves."""


def app(environ, start_response):
    body = b"hello from gunicorn\n"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
