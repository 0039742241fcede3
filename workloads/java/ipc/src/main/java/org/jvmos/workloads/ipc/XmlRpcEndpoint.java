package org.jvmos.workloads.ipc;

import java.io.IOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import org.apache.xmlrpc.XmlRpcException;
import org.apache.xmlrpc.XmlRpcRequest;
import org.apache.xmlrpc.server.PropertyHandlerMapping;
import org.apache.xmlrpc.server.RequestProcessorFactoryFactory;
import org.apache.xmlrpc.server.XmlRpcServer;
import org.apache.xmlrpc.webserver.WebServer;

/**
 * The XML-RPC server: Apache XML-RPC 3.1.3's embedded {@link WebServer} bound to 127.0.0.1, with
 * its defaults (a thread pool of connection threads; TCP_NODELAY on accepted sockets, which the
 * WebServer sets itself; no HTTP keep-alive, so each call's connection is closed after its
 * response) and the handler {@link XmlRpcBench} under the name {@code bench}.
 *
 * <p>Two changes to the WebServer, neither on a call's path: a port in use fails at once (the
 * WebServer otherwise retries the bind ten times, a second apart), and its log goes to this
 * server's error count instead of commons-logging.
 */
final class XmlRpcEndpoint extends Endpoint {

    private final Web web;

    private XmlRpcEndpoint(ServerLogic logic, Web web) {
        super(Primitive.XMLRPC, logic);
        this.web = web;
    }

    static XmlRpcEndpoint start(int port, ServerLogic logic, Options options) throws IOException {
        Web web = new Web(port, InetAddress.getByName("127.0.0.1"), options.backlog);
        XmlRpcEndpoint endpoint = new XmlRpcEndpoint(logic, web);
        web.owner = endpoint;
        PropertyHandlerMapping mapping = new PropertyHandlerMapping();
        mapping.setRequestProcessorFactoryFactory(new OneHandler(new XmlRpcBench(logic)));
        try {
            mapping.addHandler("bench", XmlRpcBench.class);
        } catch (XmlRpcException e) {
            throw new IOException("cannot register the XML-RPC handler: " + e.getMessage(), e);
        }
        XmlRpcServer server = web.getXmlRpcServer();
        server.setHandlerMapping(mapping);
        web.start();
        return endpoint;
    }

    @Override
    int port() {
        return web.getPort();
    }

    @Override
    public void close() {
        if (closing) {
            return;
        }
        closing = true;
        web.shutdown();
        web.closeSocket();
    }

    /** Hands every request to the one handler instance. */
    private static final class OneHandler implements RequestProcessorFactoryFactory {
        private final Object handler;

        OneHandler(Object handler) {
            this.handler = handler;
        }

        @Override
        @SuppressWarnings("rawtypes")
        public RequestProcessorFactory getRequestProcessorFactory(Class pClass) {
            return new RequestProcessorFactory() {
                @Override
                public Object getRequestProcessor(XmlRpcRequest pRequest) {
                    return handler;
                }
            };
        }
    }

    /** The WebServer with a bind that fails at once, a connection count and a quiet log. */
    private static final class Web extends WebServer {
        volatile XmlRpcEndpoint owner;
        private final int backlog;

        Web(int port, InetAddress address, int backlog) {
            super(port, address);
            this.backlog = backlog;
        }

        @Override
        protected ServerSocket createServerSocket(int port, int ignoredBacklog, InetAddress address)
                throws IOException {
            try {
                return new ServerSocket(port, backlog, address);
            } catch (BindException e) {
                // not a BindException, which the WebServer would retry ten times a second apart
                throw new IOException(e.getMessage(), e);
            }
        }

        @Override
        protected boolean allowConnection(Socket socket) {
            XmlRpcEndpoint o = owner;
            if (o != null) {
                o.connections.incrementAndGet();
            }
            return super.allowConnection(socket);
        }

        @Override
        public void log(Throwable error) {
            XmlRpcEndpoint o = owner;
            if (o != null) {
                o.error(String.valueOf(error));
            }
        }

        @Override
        public void log(String message) {
            XmlRpcEndpoint o = owner;
            if (o != null) {
                o.error(message);
            }
        }

        /** Wakes the listener out of accept (it would otherwise notice the shutdown within 4 s). */
        void closeSocket() {
            ServerSocket s = serverSocket;
            if (s != null) {
                try {
                    s.close();
                } catch (IOException e) {
                    // closed anyway
                }
            }
        }
    }
}
