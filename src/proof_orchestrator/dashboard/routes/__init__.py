"""The dashboard's routes, one router per concern; :func:`..app.create_app` includes them."""
