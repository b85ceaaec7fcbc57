/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha) for connect-node, so grpcurl, grpcui
 * and grpc-js reflection clients list and call the controller's services without proto files.
 * The descriptors are the ones protoc-gen-es embedded in shared/gen (the same contract the
 * server runs), serialised back to FileDescriptorProto bytes. @grpc/reflection only fits
 * grpc-js servers, hence this small implementation of the one bidi method.
 */
import { create, createRegistry, toBinary, type DescFile, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import * as v1 from "../../shared/gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../shared/gen/grpc/reflection/v1alpha/reflection_pb.js";

/** gRPC status codes the reflection protocol reports in its ErrorResponse. */
const NOT_FOUND = 5;
const UNIMPLEMENTED = 12;

type Request = v1.ServerReflectionRequest | v1alpha.ServerReflectionRequest;

/** The answer to one request, as a plain init shape both versions' messages accept. */
type Answer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

export class ReflectionIndex {
  private readonly registry;
  private readonly files = new Map<string, DescFile>();
  private readonly serviceNames: string[];

  constructor(services: DescService[]) {
    this.serviceNames = services.map((s) => s.typeName);
    const add = (f: DescFile) => {
      if (this.files.has(f.proto.name)) return;
      this.files.set(f.proto.name, f);
      f.dependencies.forEach(add);
    };
    services.forEach((s) => add(s.file));
    this.registry = createRegistry(...this.files.values());
  }

  /** The file and everything it imports, transitively: clients resolve types without a second round trip. */
  private withDependencies(file: DescFile): Uint8Array[] {
    const seen = new Set<string>();
    const out: Uint8Array[] = [];
    const visit = (f: DescFile) => {
      if (seen.has(f.name)) return;
      seen.add(f.name);
      out.push(toBinary(FileDescriptorProtoSchema, f.proto));
      f.dependencies.forEach(visit);
    };
    visit(file);
    return out;
  }

  private fileOfSymbol(symbol: string): DescFile | undefined {
    const direct = this.registry.get(symbol);
    if (direct) return direct.file;
    // A method's full name is "<service>.<method>".
    const dot = symbol.lastIndexOf(".");
    const service = dot > 0 ? this.registry.getService(symbol.slice(0, dot)) : undefined;
    return service?.methods.some((m) => m.name === symbol.slice(dot + 1)) ? service.file : undefined;
  }

  answer(req: Request): Answer {
    const r = req.messageRequest;
    const notFound = (what: string): Answer => ({
      case: "errorResponse",
      value: { errorCode: NOT_FOUND, errorMessage: `${what} not found` },
    });
    switch (r.case) {
      case "listServices":
        return { case: "listServicesResponse", value: { service: this.serviceNames.map((name) => ({ name })) } };
      case "fileByFilename": {
        const file = this.files.get(r.value);
        return file
          ? { case: "fileDescriptorResponse", value: { fileDescriptorProto: this.withDependencies(file) } }
          : notFound(`file ${r.value}`);
      }
      case "fileContainingSymbol": {
        const file = this.fileOfSymbol(r.value);
        return file
          ? { case: "fileDescriptorResponse", value: { fileDescriptorProto: this.withDependencies(file) } }
          : notFound(`symbol ${r.value}`);
      }
      case "fileContainingExtension": {
        const message = this.registry.getMessage(r.value.containingType);
        const ext = message && this.registry.getExtensionFor(message, r.value.extensionNumber);
        return ext
          ? { case: "fileDescriptorResponse", value: { fileDescriptorProto: this.withDependencies(ext.file) } }
          : notFound(`extension ${r.value.containingType}:${r.value.extensionNumber}`);
      }
      case "allExtensionNumbersOfType": {
        const message = this.registry.getMessage(r.value);
        if (!message) return notFound(`type ${r.value}`);
        const numbers = [...this.registry]
          .filter((d) => d.kind === "extension" && d.extendee.typeName === r.value)
          .map((d) => (d.kind === "extension" ? d.number : 0));
        return { case: "allExtensionNumbersResponse", value: { baseTypeName: r.value, extensionNumber: numbers } };
      }
      default:
        return {
          case: "errorResponse",
          value: { errorCode: UNIMPLEMENTED, errorMessage: "unknown reflection request" },
        };
    }
  }
}

export function createReflectionV1(index: ReflectionIndex): ServiceImpl<typeof v1.ServerReflection> {
  return {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) {
        yield create(v1.ServerReflectionResponseSchema, {
          validHost: req.host,
          originalRequest: req,
          messageResponse: index.answer(req),
        });
      }
    },
  };
}

export function createReflectionV1alpha(index: ReflectionIndex): ServiceImpl<typeof v1alpha.ServerReflection> {
  return {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) {
        yield create(v1alpha.ServerReflectionResponseSchema, {
          validHost: req.host,
          originalRequest: req,
          messageResponse: index.answer(req),
        });
      }
    },
  };
}
